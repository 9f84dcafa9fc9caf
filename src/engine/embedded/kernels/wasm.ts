// WASM SIMD kernel (assembly/gemm.ts, built by scripts/build-wasm.ts), run by the calling thread
// plus `threads - 1` helper workers that share the arena's memory.
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import type { Arena } from '../arena.ts';
import type { MatmulKernel, MatmulOptions } from './kernel.ts';
import { GEN, CLAIM, DONE, NCHUNKS, CHUNK, M, N, K, A, B, C, LDA, LDB, LDC, ACC, STOP, CTRL_INTS, CLOSED, MAX_CHUNKS, runChunks, type GemmFn } from './wasm-pool.ts';

const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
let cachedModule: WebAssembly.Module | null = null;
export function wasmModule(): WebAssembly.Module {
  cachedModule ??= new WebAssembly.Module(readFileSync(new URL('./gemm.wasm', import.meta.url)));
  return cachedModule;
}

/** Below this many multiply-adds a GEMM runs on the calling thread alone (waking helpers costs more). */
const PARALLEL_MIN_MACS = 1 << 16;

export class WasmKernel implements MatmulKernel {
  readonly name = 'wasm-simd';
  readonly threads: number;
  private readonly gemm: GemmFn;
  private readonly ctrl: Int32Array;
  private readonly helpers: Worker[] = [];
  private tag = 0;

  constructor(arena: Arena, threads = availableParallelism(), spinMs = 2) {
    this.threads = Math.max(1, threads);
    const module = wasmModule();
    const instance = new WebAssembly.Instance(module, { env: { memory: arena.memory, abort: () => { throw new Error('wasm abort'); } } });
    this.gemm = instance.exports.gemm_nt as GemmFn;
    this.ctrl = new Int32Array(new SharedArrayBuffer(CTRL_INTS * 4));
    for (let i = 1; i < this.threads; i++) {
      const w = new Worker(new URL(`./wasm-helper${EXT}`, import.meta.url), { workerData: { module, memory: arena.memory, ctrl: this.ctrl.buffer, spinMs } });
      w.unref();
      this.helpers.push(w);
    }
  }

  matmulNT(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? k, ldb = opts.ldb ?? k, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    if (this.helpers.length === 0 || m * n * k < PARALLEL_MIN_MACS) {
      this.gemm(a.byteOffset, b.byteOffset, c.byteOffset, m, 0, n, k, lda, ldb, ldc, acc);
      return;
    }
    // ~8 chunks per thread balances uneven progress; chunks are multiples of 4 columns (the tile)
    let chunk = Math.max(4, Math.ceil(n / (this.threads * 8) / 4) * 4);
    if (Math.ceil(n / chunk) > MAX_CHUNKS) chunk = Math.ceil(n / MAX_CHUNKS / 4) * 4;
    const nChunks = Math.ceil(n / chunk);
    const ctrl = this.ctrl;
    this.tag = (this.tag + 1) & 0x7fff;
    const tag = this.tag;
    ctrl[NCHUNKS] = nChunks; ctrl[CHUNK] = chunk; ctrl[M] = m; ctrl[N] = n; ctrl[K] = k;
    ctrl[A] = a.byteOffset; ctrl[B] = b.byteOffset; ctrl[C] = c.byteOffset;
    ctrl[LDA] = lda; ctrl[LDB] = ldb; ctrl[LDC] = ldc; ctrl[ACC] = acc;
    Atomics.store(ctrl, DONE, 0);
    Atomics.store(ctrl, CLAIM, tag << 16);
    Atomics.store(ctrl, GEN, tag);
    Atomics.notify(ctrl, GEN);
    runChunks(ctrl, this.gemm, tag);
    while (Atomics.load(ctrl, DONE) < nChunks);
    Atomics.store(ctrl, CLAIM, (tag << 16) | CLOSED);
  }

  async close(): Promise<void> {
    Atomics.store(this.ctrl, STOP, 1);
    Atomics.add(this.ctrl, GEN, 1);
    Atomics.notify(this.ctrl, GEN);
    await Promise.all(this.helpers.map((w) => w.terminate()));
    this.helpers.length = 0;
  }
}
