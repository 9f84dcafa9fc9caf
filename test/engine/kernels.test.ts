// The WASM SIMD kernel (1 and 2 threads) agrees with the plain TypeScript kernel, and the
// committed .wasm is exactly what scripts/build-wasm.ts builds from assembly/gemm.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Arena } from '../../src/engine/embedded/arena.ts';
import { TsKernel } from '../../src/engine/embedded/kernels/ts.ts';
import { WasmKernel } from '../../src/engine/embedded/kernels/wasm.ts';
import { buildWasm, WASM_OUT } from '../../scripts/build-wasm.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { tempDir } from '../helpers/models.ts';

const SHAPES: [number, number, number][] = [
  [1, 1, 1], [1, 7, 3], [3, 5, 9], [4, 4, 4], [5, 33, 17], [8, 64, 64], [13, 100, 37], [1, 576, 1000], [64, 288, 300], [257, 96, 130],
];

test('WASM SIMD kernel matches the TypeScript kernel within float32 rounding, with strides and accumulation', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w1 = new WasmKernel(arena, 1), w2 = new WasmKernel(arena, 2);
  const rng = new Rng(42);
  try {
    for (const [M, K, N] of SHAPES) {
      for (const strided of [false, true]) {
        // strided: operands are column windows of wider matrices
        const lda = strided ? K + 3 : K, ldb = strided ? K + 5 : K, ldc = strided ? N + 2 : N;
        const a = arena.alloc(M * lda), b = arena.alloc(N * ldb);
        for (const x of [a, b]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
        const init = Float32Array.from({ length: M * ldc }, () => rng.next());
        const outs = [ts, w1, w2].map((k) => {
          const c = arena.alloc(M * ldc);
          c.set(init);
          k.matmulNT(c, a, b, M, N, K, { lda, ldb, ldc, accumulate: strided });
          return c;
        });
        for (const c of outs.slice(1)) {
          for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
            const i = m * ldc + n, expect = outs[0][i];
            assert.ok(Math.abs(c[i] - expect) <= 1e-5 * Math.sqrt(K) + 1e-6 * Math.abs(expect), `${M}×${K}×${N} strided=${strided} at (${m},${n}): ${c[i]} vs ${expect}`);
          }
          // padding columns of C are untouched
          if (strided) for (let m = 0; m < M; m++) assert.equal(c[m * ldc + N], init[m * ldc + N]);
        }
        for (const c of outs) arena.free(c);
        arena.free(a); arena.free(b);
      }
    }
  } finally {
    await w1.close(); await w2.close();
  }
});

test('the committed gemm.wasm is reproducible from assembly/gemm.ts with the npm AssemblyScript compiler', () => {
  const t = tempDir();
  try {
    const out = join(t.dir, 'gemm.wasm');
    buildWasm(out);
    assert.ok(readFileSync(out).equals(readFileSync(WASM_OUT)), 'gemm.wasm is stale: run `npm run build:wasm` and commit it');
  } finally {
    t.cleanup();
  }
});
