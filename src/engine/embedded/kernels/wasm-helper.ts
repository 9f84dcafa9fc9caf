// A helper thread of the WASM kernel: sleeps on the control block, wakes for each job and
// claims chunks alongside the engine thread.
import { workerData } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { GEN, STOP, runChunks, bindNative, type WasmKernelExports } from './wasm-pool.ts';

const { module, memory, ctrl: ctrlBuffer, spinMs, thread, nativePath } = workerData as { module: WebAssembly.Module; memory: WebAssembly.Memory; ctrl: SharedArrayBuffer; spinMs: number; thread: number; nativePath?: string };
const nat = nativePath ? bindNative(createRequire(import.meta.url), nativePath, memory) : null;
const instance = new WebAssembly.Instance(module, { env: { memory, abort: () => { throw new Error('wasm abort'); } } });
const kernels = instance.exports as unknown as WasmKernelExports;
const ctrl = new Int32Array(ctrlBuffer);

let seen = Atomics.load(ctrl, GEN);
for (;;) {
  let g = Atomics.load(ctrl, GEN);
  if (g === seen) {
    // Jobs arrive every few hundred microseconds while a model runs: spin briefly before sleeping,
    // since waking a sleeping thread costs more than a small job.
    const deadline = performance.now() + spinMs;
    let spins = 0;
    while ((g = Atomics.load(ctrl, GEN)) === seen && (++spins & 1023 || performance.now() < deadline));
    if (g === seen) { Atomics.wait(ctrl, GEN, seen); continue; }
  }
  if (Atomics.load(ctrl, STOP)) break;
  seen = g;
  runChunks(ctrl, kernels, g, thread, nat);
}
