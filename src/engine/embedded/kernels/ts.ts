// Plain TypeScript kernels: the reference the WASM kernels are tested against, and the fallback.
import type { Kernel, MatmulOptions, AttentionBatch, AttentionBackwardBatch, PagedAttentionBatch } from './kernel.ts';
import { attentionForward, attentionBackward, type AttentionShape } from '../ops/attention.ts';
import { logSumExp } from '../ops/logits.ts';
import { swigluForward, swigluBackward } from '../ops/swiglu.ts';
import { unpackRow, type PackedMatrix } from './packed.ts';

export class TsKernel implements Kernel {
  readonly name = 'ts';
  readonly threads = 1;

  matmulNT(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? K, ldb = opts.ldb ?? K, ldc = opts.ldc ?? N;
    const acc = opts.accumulate === true;
    for (let n = 0; n < N; n++) {
      const bo = n * ldb;
      let m = 0;
      // two rows of A per pass over a row of B halves the loads of B
      for (; m + 2 <= M; m += 2) {
        const a0 = m * lda, a1 = a0 + lda;
        let s0 = 0, s1 = 0;
        for (let k = 0; k < K; k++) {
          const w = b[bo + k];
          s0 += a[a0 + k] * w;
          s1 += a[a1 + k] * w;
        }
        const c0 = m * ldc + n;
        if (acc) { c[c0] += s0; c[c0 + ldc] += s1; } else { c[c0] = s0; c[c0 + ldc] = s1; }
      }
      for (; m < M; m++) {
        const a0 = m * lda;
        let s = 0;
        for (let k = 0; k < K; k++) s += a[a0 + k] * b[bo + k];
        if (acc) c[m * ldc + n] += s; else c[m * ldc + n] = s;
      }
    }
  }

  matmulPacked(c: Float32Array, a: Float32Array, w: PackedMatrix, M: number, opts: MatmulOptions = {}): void {
    const K = w.cols, N = w.rows, lda = opts.lda ?? K, ldc = opts.ldc ?? N;
    const row = new Float32Array(K);
    for (let n = 0; n < N; n++) {
      unpackRow(w, n, row);
      for (let m = 0; m < M; m++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += a[m * lda + k] * row[k];
        if (opts.accumulate) c[m * ldc + n] += s; else c[m * ldc + n] = s;
      }
    }
  }

  matmulPackedT(c: Float32Array, a: Float32Array, w: PackedMatrix, M: number, opts: MatmulOptions = {}): void {
    const N = w.rows, K = w.cols, lda = opts.lda ?? N, ldc = opts.ldc ?? K;
    const out = new Float64Array(M * K), row = new Float32Array(K);
    for (let n = 0; n < N; n++) {
      unpackRow(w, n, row);
      for (let m = 0; m < M; m++) {
        const x = a[m * lda + n], o = m * K;
        if (x !== 0) for (let k = 0; k < K; k++) out[o + k] += x * row[k];
      }
    }
    for (let m = 0; m < M; m++) for (let k = 0; k < K; k++) if (opts.accumulate) c[m * ldc + k] += out[m * K + k]; else c[m * ldc + k] = out[m * K + k];
  }

  matmulNN(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? K, ldb = opts.ldb ?? N, ldc = opts.ldc ?? N;
    const row = new Float64Array(N);
    for (let m = 0; m < M; m++) {
      row.fill(0);
      for (let k = 0; k < K; k++) {
        const x = a[m * lda + k], bo = k * ldb;
        if (x !== 0) for (let n = 0; n < N; n++) row[n] += x * b[bo + n];
      }
      const co = m * ldc;
      if (opts.accumulate) for (let n = 0; n < N; n++) c[co + n] += row[n];
      else for (let n = 0; n < N; n++) c[co + n] = row[n];
    }
  }

  matmulTN(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? M, ldb = opts.ldb ?? N, ldc = opts.ldc ?? N;
    const out = new Float64Array(M * N);
    for (let k = 0; k < K; k++) {
      const ao = k * lda, bo = k * ldb;
      for (let m = 0; m < M; m++) {
        const x = a[ao + m];
        if (x !== 0) for (let n = 0; n < N; n++) out[m * N + n] += x * b[bo + n];
      }
    }
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      if (opts.accumulate) c[m * ldc + n] += out[m * N + n]; else c[m * ldc + n] = out[m * N + n];
    }
  }

  private scores = new Float64Array(0);

  attention(b: AttentionBatch, shape: AttentionShape): void {
    this.ensureScores(b);
    attentionForward(b.out, b.q, 0, b.ldq, b.rows, b.rowK, b.rowV, b.rowPos, shape, this.scores);
  }

  /** The reference for paged caches: their bfloat16 keys and values widened to float32, then `attention`. */
  attentionPaged(b: PagedAttentionBatch, shape: AttentionShape): void {
    const widened = new Map<unknown, [Float32Array, Float32Array]>();
    const rowK: Float32Array[] = [], rowV: Float32Array[] = [];
    for (let r = 0; r < b.rows; r++) {
      const c = b.rowCache[r];
      let kv = widened.get(c);
      if (!kv) {
        let n = 0;
        for (let i = 0; i < b.rows; i++) if (b.rowCache[i] === c) n = Math.max(n, b.rowPos[i] + 1);
        widened.set(c, (kv = [c.read(b.layer, 'k', n), c.read(b.layer, 'v', n)]));
      }
      rowK.push(kv[0]); rowV.push(kv[1]);
    }
    this.attention({ q: b.q, ldq: b.ldq, out: b.out, rows: b.rows, rowK, rowV, rowPos: b.rowPos }, shape);
  }

  attentionBackward(b: AttentionBackwardBatch, shape: AttentionShape): void {
    this.ensureScores(b);
    attentionBackward(b.dq, 0, b.lddq, b.dOut, b.out, b.q, 0, b.ldq, b.rows, b.rowK, b.rowV, b.rowDK, b.rowDV, b.rowPos, shape, this.scores);
  }

  swiglu(out: Float32Array, gu: Float32Array, rows: number, inter: number): void { swigluForward(out, gu, rows, inter); }
  swigluBackward(dgu: Float32Array, dout: Float32Array, gu: Float32Array, rows: number, inter: number): void { swigluBackward(dgu, dout, gu, rows, inter); }

  rowsLogSumExp(logits: Float32Array, rows: number, V: number, invT: number, lse: Float32Array): void {
    for (let r = 0; r < rows; r++) lse[r] = logSumExp(logits, r * V, V, invT);
  }

  rowsSoftmaxGrad(logits: Float32Array, rows: number, V: number, invT: number, lse: Float32Array, coef: Float32Array): void {
    for (let r = 0; r < rows; r++) {
      const o = r * V, c = coef[r], l = lse[r];
      for (let v = 0; v < V; v++) logits[o + v] = -c * Math.exp(logits[o + v] * invT - l);
    }
  }

  private ensureScores(b: AttentionBatch): void {
    let maxPos = 0;
    for (let r = 0; r < b.rows; r++) maxPos = Math.max(maxPos, b.rowPos[r] + 1);
    if (this.scores.length < maxPos) this.scores = new Float64Array(maxPos * 2);
  }

  async close(): Promise<void> {}
}
