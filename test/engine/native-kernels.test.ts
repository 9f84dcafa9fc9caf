// The native kernel backend: a row's result never depends on how many rows are computed with it
// (what makes sampling and scoring agree to the last bit), the AVX2 and AVX-512 builds give the
// same bits, the engine falls back to WebAssembly where the addon is missing, and the build script
// never fails an install that has no C compiler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Arena } from '../../src/engine/embedded/arena.ts';
import { NativeKernel, loadNativeAddon } from '../../src/engine/embedded/kernels/native.ts';
import { packPanels, packedSlots, type PackedMatrix } from '../../src/engine/embedded/kernels/packed.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { tempDir } from '../helpers/models.ts';

const ROOT = join(import.meta.dirname, '../..');
const native = loadNativeAddon();
const skip = native.addon ? false : `native kernels unavailable here: ${native.why}`;

function bits(a: Float32Array): number[] { return Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length)); }

test('native packed (f32, bf16, int8) and NT products: every row has the same bits alone, in any batch, on 1 or 2 threads', { skip }, async () => {
  const arena = new Arena();
  const kernels = [new NativeKernel(arena, 1), new NativeKernel(arena, 2)];
  const rng = new Rng(5);
  try {
    // K, N: a partial panel, a width past every tile, a long K (decode-sized and prefill-sized row counts below);
    // LoRA ranks (K ≤ 32: NT through transposed slabs of 256 columns) with several slabs and a K that is not a multiple of 8
    for (const [K, N] of [[64, 13], [576, 200], [300, 1001], [16, 600], [5, 37]]) {
      const w = arena.alloc(N * K);
      for (let i = 0; i < w.length; i++) w[i] = rng.next() * 2 - 1;
      const packs = (['f32', 'bf16', 'int8'] as const).map((dtype): PackedMatrix => {
        const m = { data: arena.alloc(packedSlots(N, K, dtype)), rows: N, cols: K, dtype };
        packPanels(w, N, K, m.data, dtype);
        return m;
      });
      const M = 37;
      const a = arena.alloc(M * K);
      for (let i = 0; i < a.length; i++) a[i] = rng.next() * 2 - 1;
      const one = arena.alloc(N), batch = arena.alloc(M * N);
      for (const k of kernels) {
        for (const form of ['packed f32', 'packed bf16', 'packed int8', 'nt'] as const) {
          const packed = packs[['packed f32', 'packed bf16', 'packed int8'].indexOf(form)];
          const run = (c: Float32Array, x: Float32Array, m: number) => (form === 'nt' ? k.matmulNT(c, x, w, m, N, K) : k.matmulPacked(c, x, packed, m));
          run(batch, a, M);
          for (const r of [0, 5, 17, 36]) {
            run(one, a.subarray(r * K), 1);
            assert.deepEqual(bits(one), bits(batch.subarray(r * N, (r + 1) * N)), `${form} K=${K} N=${N} row ${r} on ${k.threads} thread(s)`);
          }
          // a batch of 9 rows starting elsewhere (another tile split) agrees with the big batch too
          const nine = arena.alloc(9 * N);
          run(nine, a.subarray(20 * K), 9);
          assert.deepEqual(bits(nine), bits(batch.subarray(20 * N, 29 * N)), `${form} K=${K} N=${N} rows 20..28`);
          arena.free(nine);
        }
      }
      for (const x of [w, ...packs.map((p) => p.data), a, one, batch]) arena.free(x);
    }
  } finally {
    for (const k of kernels) await k.close();
  }
});

/** A child process that runs the five products (and the packed ones at bf16 and int8) on fixed inputs and prints a hash of the outputs' bits. */
function productsHash(env: Record<string, string>): string {
  const script = `
    import { Arena } from './src/engine/embedded/arena.ts';
    import { createKernel } from './src/engine/embedded/model.ts';
    import { packPanels, packedSlots } from './src/engine/embedded/kernels/packed.ts';
    import { createHash } from 'node:crypto';
    const arena = new Arena(), k = createKernel(arena, undefined, 2), h = createHash('sha256');
    const f = (n) => { const x = arena.alloc(n); for (let i = 0; i < n; i++) x[i] = Math.sin(i * 0.37); return x; };
    const M = 23, K = 203, N = 77;
    const a = f(M * K), w = f(N * K), g = f(M * N);
    const [p, pb, pi] = ['f32', 'bf16', 'int8'].map((dtype) => { const m = { data: arena.alloc(packedSlots(N, K, dtype)), rows: N, cols: K, dtype }; packPanels(w, N, K, m.data, dtype); return m; });
    const outs = [arena.alloc(M * N), arena.alloc(M * N), arena.alloc(M * K), arena.alloc(M * K), arena.alloc(N * K)];
    k.matmulPacked(outs[0], a, p, M); k.matmulNT(outs[1], a, w, M, N, K); k.matmulPackedT(outs[2], g, p, M);
    k.matmulNN(outs[3], g, w, M, K, N); k.matmulTN(outs[4], g, a, N, K, M);
    for (const q of [pb, pi]) { const o = [arena.alloc(M * N), arena.alloc(M * K)]; k.matmulPacked(o[0], a, q, M); k.matmulPackedT(o[1], g, q, M); outs.push(...o); }
    for (const o of outs) h.update(new Uint8Array(o.buffer, o.byteOffset, o.byteLength));
    console.log(k.name + ' ' + h.digest('hex'));
    await k.close();`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const noAvx512 = skip || (native.addon?.isa() === 'avx512' ? false : 'this CPU has no AVX-512 (F, VL, BW, DQ): there is only the AVX2 build to run');

test('the AVX2 and AVX-512 builds of the native kernels give the same bits (f32, bf16 and int8 weights)', { skip: noAvx512 }, () => {
  const wide = productsHash({ OPENCLAW_RL_KERNEL: 'native' });
  const narrow = productsHash({ OPENCLAW_RL_KERNEL: 'native', OPENCLAW_RL_NATIVE_ISA: 'avx2' });
  assert.match(narrow, /^native-avx2 /);
  assert.equal(narrow.split(' ')[1], wide.split(' ')[1], `${wide} vs ${narrow}`);
});

test('without the addon the engine runs on WebAssembly, and asking for native says why it cannot', () => {
  const env = { OPENCLAW_RL_NATIVE_PATH: '/nonexistent/kernels.node' };
  assert.match(productsHash(env), /^wasm-simd [0-9a-f]{64}$/);
  assert.throws(() => execFileSync(process.execPath, ['--input-type=module', '-e', `
    import { Arena } from './src/engine/embedded/arena.ts';
    import { createKernel } from './src/engine/embedded/model.ts';
    createKernel(new Arena(), 'native');`], { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'pipe' }),
  (e: Error & { stderr: Buffer }) => /--kernel native: the native kernels were not built/.test(e.stderr.toString()));
  // OPENCLAW_RL_KERNEL forces a backend, and a wrong value is refused
  assert.match(productsHash({ OPENCLAW_RL_KERNEL: 'wasm' }), /^wasm-simd /);
  assert.throws(() => productsHash({ OPENCLAW_RL_KERNEL: 'gpu' }), (e: Error & { stderr: Buffer }) => /OPENCLAW_RL_KERNEL must be one of native, wasm, ts/.test(e.stderr.toString()));
});

test('the build script leaves the install working without a C compiler, and builds a loadable addon with one', () => {
  const tmp = tempDir();
  try {
    const out = join(tmp.dir, 'kernels.node');
    const msg = execFileSync(process.execPath, [join(ROOT, 'scripts/build-native.mjs'), '--out', out], { env: { ...process.env, CC: '/nonexistent/cc' }, encoding: 'utf8' });
    assert.match(msg, /native kernels not built \(no C compiler \('\/nonexistent\/cc' not found\)\); the engine will use its WebAssembly kernels/);
    assert.ok(!existsSync(out));
    if (!native.addon) return; // no compiler here either: the half above is what this machine can check
    execFileSync(process.execPath, [join(ROOT, 'scripts/build-native.mjs'), '--out', out], { encoding: 'utf8' });
    const hash = productsHash({ OPENCLAW_RL_NATIVE_PATH: out, OPENCLAW_RL_KERNEL: 'native' });
    assert.equal(hash.split(' ')[1], productsHash({ OPENCLAW_RL_KERNEL: 'native' }).split(' ')[1], 'the fresh build computes what the installed one does');
  } finally {
    tmp.cleanup();
  }
});
