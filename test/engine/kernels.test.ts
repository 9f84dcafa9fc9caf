// The WASM SIMD kernel (1 and 2 threads) and, where its addon was built, the native kernel agree
// with the plain TypeScript kernel, and the committed .wasm is exactly what scripts/build-wasm.ts
// builds from assembly/kernels.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Arena } from '../../src/engine/embedded/arena.ts';
import { TsKernel } from '../../src/engine/embedded/kernels/ts.ts';
import { WasmKernel } from '../../src/engine/embedded/kernels/wasm.ts';
import { NativeKernel, loadNativeAddon } from '../../src/engine/embedded/kernels/native.ts';
import { buildWasm, WASM_OUT } from '../../scripts/build-wasm.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { packPanels, packedLength, packedSlots, unpackRow, bf16Bits, bf16Value, int8Scale, int8Quantize } from '../../src/engine/embedded/kernels/packed.ts';
import { tempDir } from '../helpers/models.ts';

/** The native kernel on 1 and 2 threads where its addon is built here (else none: WebAssembly is then all there is). */
function nativeKernels(arena: Arena): NativeKernel[] {
  return loadNativeAddon().addon ? [new NativeKernel(arena, 1), new NativeKernel(arena, 2)] : [];
}

const SHAPES: [number, number, number][] = [
  [1, 1, 1], [1, 7, 3], [3, 5, 9], [4, 4, 4], [5, 33, 17], [8, 64, 64], [13, 100, 37], [1, 576, 1000], [64, 288, 300], [257, 96, 130],
];

test('WASM SIMD kernel matches the TypeScript kernel within float32 rounding, with strides and accumulation', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w1 = new WasmKernel(arena, 1), w2 = new WasmKernel(arena, 2);
  const nat = nativeKernels(arena);
  const rng = new Rng(42);
  try {
    for (const [M, K, N] of SHAPES) {
      for (const strided of [false, true]) {
        // strided: operands are column windows of wider matrices
        const lda = strided ? K + 3 : K, ldb = strided ? K + 5 : K, ldc = strided ? N + 2 : N;
        const a = arena.alloc(M * lda), b = arena.alloc(N * ldb);
        for (const x of [a, b]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
        const init = Float32Array.from({ length: M * ldc }, () => rng.next());
        const outs = [ts, w1, w2, ...nat].map((k) => {
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
    await w1.close(); await w2.close(); for (const k of nat) await k.close();
  }
});

test('WASM NN and TN matrix multiplies (the forms of the backward pass) match the TypeScript kernel', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w1 = new WasmKernel(arena, 1), w2 = new WasmKernel(arena, 2);
  const nat = nativeKernels(arena);
  const rng = new Rng(9);
  try {
    for (const [M, K, N] of [...SHAPES, [64, 576, 16], [16, 256, 576], [300, 48, 33]] as [number, number, number][]) {
      for (const form of ['NN', 'TN'] as const) {
        // NN: A[M×K]·B[K×N]; TN: A[K×M]ᵀ·B[K×N]
        const lda = form === 'NN' ? K + 1 : M + 3, ldb = N + 2, ldc = N + 1;
        const a = arena.alloc((form === 'NN' ? M : K) * lda), b = arena.alloc(K * ldb);
        for (const x of [a, b]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
        const init = Float32Array.from({ length: M * ldc }, () => rng.next());
        const outs = [ts, w1, w2, ...nat].map((kern) => {
          const c = arena.alloc(M * ldc);
          c.set(init);
          (form === 'NN' ? kern.matmulNN : kern.matmulTN).call(kern, c, a, b, M, N, K, { lda, ldb, ldc, accumulate: true });
          return c;
        });
        for (const c of outs.slice(1)) for (let m = 0; m < M; m++) for (let n = 0; n <= N; n++) {
          const i = m * ldc + n;
          assert.ok(Math.abs(c[i] - outs[0][i]) <= 1e-5 * Math.sqrt(K) + 1e-6 * Math.abs(outs[0][i]), `${form} ${M}×${K}×${N} at (${m},${n}): ${c[i]} vs ${outs[0][i]}`);
        }
        for (const c of outs) arena.free(c);
        arena.free(a); arena.free(b);
      }
    }
  } finally {
    await w1.close(); await w2.close(); for (const k of nat) await k.close();
  }
});

test('packed weights, float32, bfloat16 and int8: forward C = A·Wᵀ and backward C = A·W match the plain kernels, for any row count and partial panels', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w1 = new WasmKernel(arena, 1), w2 = new WasmKernel(arena, 2);
  const nat = nativeKernels(arena);
  const rng = new Rng(12);
  try {
    // [M, rows (out), cols (in)]: M covers the 6-, 2- and 1-row paths; rows % 8 != 0 gives a partial panel
    for (const [M, rows, cols] of [[1, 8, 8], [1, 13, 5], [2, 16, 33], [5, 172, 64], [7, 64, 172], [13, 21, 10], [64, 576, 300], [300, 96, 130]] as [number, number, number][]) {
     for (const dtype of ['f32', 'bf16', 'int8'] as const) {
      const w = arena.alloc(rows * cols);
      for (let i = 0; i < w.length; i++) w[i] = rng.next() * 2 - 1;
      const packed = { data: arena.alloc(packedSlots(rows, cols, dtype)), rows, cols, dtype };
      packPanels(w, rows, cols, packed.data, dtype);
      // bfloat16 panels hold the rounded weights: the reference is float32 arithmetic on those
      if (dtype === 'bf16') for (let i = 0; i < w.length; i++) w[i] = bf16Value(bf16Bits(w[i]));
      // int8 panels hold q with a scale s per row: the reference is float32 arithmetic on q·s
      if (dtype === 'int8') {
        const q = new Float32Array(cols);
        for (let r = 0; r < rows; r++) {
          const s = int8Scale(w, r * cols, cols);
          for (let k = 0; k < cols; k++) q[k] = int8Quantize(w[r * cols + k], s) * s;
          w.set(q, r * cols);
        }
      }
      const row = new Float32Array(cols);
      unpackRow(packed, rows - 1, row);
      assert.deepEqual(Array.from(row), Array.from(w.subarray((rows - 1) * cols, rows * cols)));
      // forward: A [M × cols] (stride cols + 3) → C [M × rows] (stride rows + 2), accumulating
      const a = arena.alloc(M * (cols + 3)), g = arena.alloc(M * (rows + 1));
      for (const x of [a, g]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
      const init = Float32Array.from({ length: M * (rows + 2) }, () => rng.next());
      const ref = arena.alloc(M * (rows + 2));
      ref.set(init);
      ts.matmulNT(ref, a, w, M, rows, cols, { lda: cols + 3, ldc: rows + 2, accumulate: true });
      const initT = Float32Array.from({ length: M * (cols + 2) }, () => rng.next());
      const refT = arena.alloc(M * (cols + 2));
      refT.set(initT);
      ts.matmulNN(refT, g, w, M, cols, rows, { lda: rows + 1, ldc: cols + 2, accumulate: true });
      for (const k of [ts, w1, w2, ...nat]) {
        const c = arena.alloc(M * (rows + 2));
        c.set(init);
        k.matmulPacked(c, a, packed, M, { lda: cols + 3, ldc: rows + 2, accumulate: true });
        for (let i = 0; i < c.length; i++) assert.ok(Math.abs(c[i] - ref[i]) < 1e-5 * Math.sqrt(cols) + 1e-6, `${k.name}/${k.threads} ${dtype} packed ${M}×${rows}×${cols} at ${i}: ${c[i]} vs ${ref[i]}`);
        const cT = arena.alloc(M * (cols + 2));
        cT.set(initT);
        k.matmulPackedT(cT, g, packed, M, { lda: rows + 1, ldc: cols + 2, accumulate: true });
        for (let i = 0; i < cT.length; i++) assert.ok(Math.abs(cT[i] - refT[i]) < 1e-5 * Math.sqrt(rows) + 1e-6, `${k.name}/${k.threads} ${dtype} packedT ${M}×${rows}×${cols} at ${i}: ${cT[i]} vs ${refT[i]}`);
      }
     }
    }
  } finally {
    await w1.close(); await w2.close(); for (const k of nat) await k.close();
  }
});

test('WASM and native attention match the TypeScript attention: GQA, rows at different positions of different caches, sliding window', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w1 = new WasmKernel(arena, 1), w2 = new WasmKernel(arena, 2);
  const nat = nativeKernels(arena);
  const rng = new Rng(7);
  try {
    for (const [numHeads, numKvHeads, headDim, slidingWindow] of [[4, 2, 8, null], [8, 4, 8, 6], [9, 3, 64, null], [6, 6, 10, 5], [16, 8, 128, null], [9, 3, 64, 70], [4, 4, 16, null], [6, 2, 32, null], [6, 2, 24, 9]] as const) {
      const kvDim = numKvHeads * headDim, qDim = numHeads * headDim, ldq = qDim + 7;
      const caches = [40, 300].map((n) => {
        const k = arena.alloc(n * kvDim), v = arena.alloc(n * kvDim);
        for (const x of [k, v]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
        return { k, v };
      });
      // rows: a prefill-like run in cache 1 and decode-like rows in cache 0
      const rowPos = Int32Array.from([0, 17, 39, 120, 121, 299]);
      const which = [0, 0, 0, 1, 1, 1];
      const rows = rowPos.length;
      const q = arena.alloc(rows * ldq);
      for (let i = 0; i < q.length; i++) q[i] = (rng.next() * 2 - 1) * 3;
      const outs = [ts, w1, w2, ...nat].map((kern) => {
        const out = arena.alloc(rows * qDim);
        kern.attention({ q, ldq, out, rows, rowK: which.map((c) => caches[c].k), rowV: which.map((c) => caches[c].v), rowPos }, { numHeads, numKvHeads, headDim, slidingWindow });
        return out;
      });
      for (const o of outs.slice(1)) for (let i = 0; i < o.length; i++) assert.ok(Math.abs(o[i] - outs[0][i]) < 2e-5, `heads ${numHeads}/${numKvHeads}×${headDim} window ${slidingWindow} at ${i}: ${o[i]} vs ${outs[0][i]}`);
    }
  } finally {
    await w1.close(); await w2.close(); for (const k of nat) await k.close();
  }
});

test('native attention over float32 caches: a query gives the same bits alone (a decode row) as inside a prefill run', async (t) => {
  const arena = new Arena();
  const nat = nativeKernels(arena);
  if (nat.length === 0) { t.skip('the native addon is not built here'); return; }
  const rng = new Rng(11);
  try {
    for (const [numHeads, numKvHeads, headDim, slidingWindow] of [[9, 3, 64, null], [16, 8, 128, null], [6, 2, 32, 50], [8, 4, 8, null], [6, 2, 24, 50]] as const) {
      const kvDim = numKvHeads * headDim, qDim = numHeads * headDim, shape = { numHeads, numKvHeads, headDim, slidingWindow };
      const n = 200, k = arena.alloc(n * kvDim), v = arena.alloc(n * kvDim), q = arena.alloc(n * qDim);
      for (const x of [k, v, q]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
      for (const kern of nat) {
        const all = arena.alloc(n * qDim);
        kern.attention({ q, ldq: qDim, out: all, rows: n, rowK: Array(n).fill(k), rowV: Array(n).fill(v), rowPos: Int32Array.from({ length: n }, (_, i) => i) }, shape);
        for (const r of [0, 5, 63, 64, 65, 130, 199]) {
          const one = arena.alloc(qDim);
          kern.attention({ q: q.subarray(r * qDim), ldq: qDim, out: one, rows: 1, rowK: [k], rowV: [v], rowPos: Int32Array.of(r) }, shape);
          for (let i = 0; i < qDim; i++) assert.equal(one[i], all[r * qDim + i], `${kern.name} ${numHeads}/${numKvHeads}×${headDim} row ${r} at ${i}`);
          arena.free(one);
        }
        arena.free(all);
      }
    }
  } finally {
    for (const k of nat) await k.close();
  }
});

test('WASM and native attention backward match the TypeScript one: several sequences, GQA, sliding window, 1 and 2 threads', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w1 = new WasmKernel(arena, 1), w2 = new WasmKernel(arena, 2);
  const nat = nativeKernels(arena);
  const rng = new Rng(8);
  const fill = (a: Float32Array, k = 1) => { for (let i = 0; i < a.length; i++) a[i] = (rng.next() * 2 - 1) * k; return a; };
  try {
    for (const [numHeads, numKvHeads, headDim, slidingWindow, lengths] of [
      [4, 2, 8, null, [7, 40, 3]], [8, 4, 8, 6, [7, 40, 3]], [9, 3, 64, null, [7, 40, 3]], [6, 6, 10, 5, [7, 40, 3]],
      [9, 3, 64, null, [70, 1, 131]], [9, 3, 64, 20, [70, 1, 45]], [16, 8, 128, null, [37, 66]], [4, 2, 16, null, [5, 19]], [6, 2, 24, null, [33, 70]],
    ] as const) {
      const kvDim = numKvHeads * headDim, qDim = numHeads * headDim, ldq = qDim + 2 * kvDim;
      const rows = lengths.reduce((a, b) => a + b, 0);
      const K = lengths.map((n) => fill(arena.alloc(n * kvDim))), V = lengths.map((n) => fill(arena.alloc(n * kvDim)));
      const rowK: Float32Array[] = [], rowV: Float32Array[] = [], pos: number[] = [], seqOf: number[] = [];
      lengths.forEach((n, s) => { for (let p = 0; p < n; p++) { rowK.push(K[s]); rowV.push(V[s]); pos.push(p); seqOf.push(s); } });
      const rowPos = Int32Array.from(pos);
      const q = fill(arena.alloc(rows * ldq), 2), dOut = fill(arena.alloc(rows * qDim));
      const out = arena.alloc(rows * qDim);
      ts.attention({ q, ldq, out, rows, rowK, rowV, rowPos }, { numHeads, numKvHeads, headDim, slidingWindow });
      const results = [ts, w1, w2, ...nat].map((kern) => {
        const dq = arena.alloc(rows * ldq);
        const dK = lengths.map((n) => arena.alloc(n * kvDim)), dV = lengths.map((n) => arena.alloc(n * kvDim));
        kern.attentionBackward({ q, ldq, out, rows, rowK, rowV, rowPos, dOut, dq, lddq: ldq, rowDK: seqOf.map((s) => dK[s]), rowDV: seqOf.map((s) => dV[s]) }, { numHeads, numKvHeads, headDim, slidingWindow });
        return { dq, dK, dV };
      });
      for (const r of results.slice(1)) {
        const cmp = (a: Float32Array, b: Float32Array, what: string) => { for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) < 5e-5, `${what} ${numHeads}/${numKvHeads}×${headDim} at ${i}: ${a[i]} vs ${b[i]}`); };
        cmp(r.dq, results[0].dq, 'dq');
        r.dK.forEach((d, s) => cmp(d, results[0].dK[s], `dK[${s}]`));
        r.dV.forEach((d, s) => cmp(d, results[0].dV[s], `dV[${s}]`));
      }
    }
  } finally {
    await w1.close(); await w2.close(); for (const k of nat) await k.close();
  }
});

test('WASM row log-sum-exp and softmax gradient (vectorised exp) match the TypeScript versions', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w2 = new WasmKernel(arena, 2);
  const rng = new Rng(10);
  try {
    for (const [rows, V, T] of [[1, 7, 1], [5, 512, 0.7], [33, 1003, 1.3], [64, 32000, 1]]) {
      const x = arena.alloc(rows * V);
      for (let i = 0; i < x.length; i++) x[i] = (rng.next() * 2 - 1) * 30; // spans e^±30
      const coef = arena.alloc(rows);
      for (let r = 0; r < rows; r++) coef[r] = rng.next() * 2 - 1;
      const outs = [ts, w2].map((k) => {
        const l = arena.alloc(rows), g = arena.alloc(rows * V);
        g.set(x);
        k.rowsLogSumExp(x, rows, V, 1 / T, l);
        k.rowsSoftmaxGrad(g, rows, V, 1 / T, l, coef);
        return { l, g };
      });
      for (let r = 0; r < rows; r++) assert.ok(Math.abs(outs[1].l[r] - outs[0].l[r]) < 2e-5 * Math.max(1, Math.abs(outs[0].l[r])), `lse row ${r}: ${outs[1].l[r]} vs ${outs[0].l[r]}`);
      for (let i = 0; i < x.length; i++) assert.ok(Math.abs(outs[1].g[i] - outs[0].g[i]) < 1e-5 * Math.abs(coef[Math.floor(i / V)]) + 1e-9, `grad ${i}: ${outs[1].g[i]} vs ${outs[0].g[i]}`);
    }
  } finally {
    await w2.close();
  }
});

test('WASM SwiGLU forward and backward match the TypeScript versions', async () => {
  const arena = new Arena();
  const ts = new TsKernel(), w = new WasmKernel(arena, 1);
  const rng = new Rng(13);
  try {
    for (const [rows, I] of [[1, 3], [3, 172], [17, 1536]]) {
      const gu = arena.alloc(rows * 2 * I), dout = arena.alloc(rows * I);
      for (let i = 0; i < gu.length; i++) gu[i] = (rng.next() * 2 - 1) * 12;
      for (let i = 0; i < dout.length; i++) dout[i] = rng.next() * 2 - 1;
      const [o1, o2] = [ts, w].map((k) => { const o = arena.alloc(rows * I); k.swiglu(o, gu, rows, I); return o; });
      const [g1, g2] = [ts, w].map((k) => { const g = arena.alloc(rows * 2 * I); k.swigluBackward(g, dout, gu, rows, I); return g; });
      for (let i = 0; i < o1.length; i++) assert.ok(Math.abs(o1[i] - o2[i]) <= 1e-6 * Math.max(1, Math.abs(o1[i])), `swiglu ${rows}×${I} at ${i}: ${o2[i]} vs ${o1[i]}`);
      for (let i = 0; i < g1.length; i++) assert.ok(Math.abs(g1[i] - g2[i]) <= 1e-6 * Math.max(1, Math.abs(g1[i])), `swiglu backward ${rows}×${I} at ${i}: ${g2[i]} vs ${g1[i]}`);
    }
  } finally {
    await w.close();
  }
});

test('the committed kernels.wasm is reproducible from assembly/kernels.ts with the npm AssemblyScript compiler', () => {
  const t = tempDir();
  try {
    const out = join(t.dir, 'kernels.wasm');
    buildWasm(out);
    assert.ok(readFileSync(out).equals(readFileSync(WASM_OUT)), 'kernels.wasm is stale: run `npm run build:wasm` and commit it');
  } finally {
    t.cleanup();
  }
});
