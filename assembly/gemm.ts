// Matrix multiplies on row-major operands: gemm_nt (forward with weights as stored, LoRA products),
// gemm_nn (dX = dY·W) and gemm_tn (weight gradients).
import { fma, hsum, put, put4, dot } from './common';

// gemm_nt: C[m, n] (+)= Σ_k A[m, k] · B[n, k]   (B in Hugging Face's [out, in] weight layout)
// Both operands stream along k, so the inner loop is a SIMD dot product of 4 rows of A against
// 4 rows of B: 16 accumulators, 8 loads per 16 fused multiply-adds.
export function gemm_nt(a: usize, b: usize, c: usize, M: i32, n0: i32, n1: i32, K: i32, lda: i32, ldb: i32, ldc: i32, acc: i32): void {
  if (M < 8) { gemm_nt_block(a, b, c, M, n0, n1, K, lda, ldb, ldc, acc); return; }
  // Keep a block of B rows (about 128 KB) hot in L2 while every row tile of A passes over it.
  let nb = (32768 / max(K, 1)) & ~3;
  if (nb < 4) nb = 4;
  for (let n = n0; n < n1; n += nb) gemm_nt_block(a, b, c, M, n, min(n + nb, n1), K, lda, ldb, ldc, acc);
}

function gemm_nt_block(a: usize, b: usize, c: usize, M: i32, n0: i32, n1: i32, K: i32, lda: i32, ldb: i32, ldc: i32, acc: i32): void {
  const K4 = K & ~3;
  let m = 0;
  for (; m + 4 <= M; m += 4) {
    const a0 = a + (<usize>(m * lda) << 2);
    const a1 = a0 + (<usize>lda << 2);
    const a2 = a1 + (<usize>lda << 2);
    const a3 = a2 + (<usize>lda << 2);
    let n = n0;
    for (; n + 4 <= n1; n += 4) {
      const b0 = b + (<usize>(n * ldb) << 2);
      const b1 = b0 + (<usize>ldb << 2);
      const b2 = b1 + (<usize>ldb << 2);
      const b3 = b2 + (<usize>ldb << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c02 = f32x4.splat(0), c03 = f32x4.splat(0);
      let c10 = f32x4.splat(0), c11 = f32x4.splat(0), c12 = f32x4.splat(0), c13 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c22 = f32x4.splat(0), c23 = f32x4.splat(0);
      let c30 = f32x4.splat(0), c31 = f32x4.splat(0), c32 = f32x4.splat(0), c33 = f32x4.splat(0);
      for (let k = 0; k < K4; k += 4) {
        const o = <usize>k << 2;
        const vb0 = v128.load(b0 + o), vb1 = v128.load(b1 + o), vb2 = v128.load(b2 + o), vb3 = v128.load(b3 + o);
        let va = v128.load(a0 + o);
        c00 = fma(va, vb0, c00); c01 = fma(va, vb1, c01); c02 = fma(va, vb2, c02); c03 = fma(va, vb3, c03);
        va = v128.load(a1 + o);
        c10 = fma(va, vb0, c10); c11 = fma(va, vb1, c11); c12 = fma(va, vb2, c12); c13 = fma(va, vb3, c13);
        va = v128.load(a2 + o);
        c20 = fma(va, vb0, c20); c21 = fma(va, vb1, c21); c22 = fma(va, vb2, c22); c23 = fma(va, vb3, c23);
        va = v128.load(a3 + o);
        c30 = fma(va, vb0, c30); c31 = fma(va, vb1, c31); c32 = fma(va, vb2, c32); c33 = fma(va, vb3, c33);
      }
      let s00 = hsum(c00), s01 = hsum(c01), s02 = hsum(c02), s03 = hsum(c03);
      let s10 = hsum(c10), s11 = hsum(c11), s12 = hsum(c12), s13 = hsum(c13);
      let s20 = hsum(c20), s21 = hsum(c21), s22 = hsum(c22), s23 = hsum(c23);
      let s30 = hsum(c30), s31 = hsum(c31), s32 = hsum(c32), s33 = hsum(c33);
      for (let k = K4; k < K; k++) {
        const o = <usize>k << 2;
        const x0 = load<f32>(b0 + o), x1 = load<f32>(b1 + o), x2 = load<f32>(b2 + o), x3 = load<f32>(b3 + o);
        let y = load<f32>(a0 + o); s00 += y * x0; s01 += y * x1; s02 += y * x2; s03 += y * x3;
        y = load<f32>(a1 + o); s10 += y * x0; s11 += y * x1; s12 += y * x2; s13 += y * x3;
        y = load<f32>(a2 + o); s20 += y * x0; s21 += y * x1; s22 += y * x2; s23 += y * x3;
        y = load<f32>(a3 + o); s30 += y * x0; s31 += y * x1; s32 += y * x2; s33 += y * x3;
      }
      const r0 = c + (<usize>(m * ldc + n) << 2);
      const r1 = r0 + (<usize>ldc << 2), r2 = r1 + (<usize>ldc << 2), r3 = r2 + (<usize>ldc << 2);
      put(r0, s00, acc); put(r0 + 4, s01, acc); put(r0 + 8, s02, acc); put(r0 + 12, s03, acc);
      put(r1, s10, acc); put(r1 + 4, s11, acc); put(r1 + 8, s12, acc); put(r1 + 12, s13, acc);
      put(r2, s20, acc); put(r2 + 4, s21, acc); put(r2 + 8, s22, acc); put(r2 + 12, s23, acc);
      put(r3, s30, acc); put(r3 + 4, s31, acc); put(r3 + 8, s32, acc); put(r3 + 12, s33, acc);
    }
    for (; n < n1; n++) {
      const bn = b + (<usize>(n * ldb) << 2);
      put(c + (<usize>(m * ldc + n) << 2), dot(a0, bn, K), acc);
      put(c + (<usize>((m + 1) * ldc + n) << 2), dot(a1, bn, K), acc);
      put(c + (<usize>((m + 2) * ldc + n) << 2), dot(a2, bn, K), acc);
      put(c + (<usize>((m + 3) * ldc + n) << 2), dot(a3, bn, K), acc);
    }
  }
  for (; m < M; m++) gemv_rows(a + (<usize>(m * lda) << 2), b, c + (<usize>(m * ldc) << 2), n0, n1, K, ldb, acc);
}

/**
 * One row of A against rows [n0, n1) of B: the decode-time matrix-vector product (memory bound).
 * Each output is summed in exactly the order of the 4 × 4 tile of gemm_nt (one 4-wide accumulator
 * over k, lanes added 0..3, then the scalar tail), so results do not depend on the row count.
 */
function gemv_rows(a: usize, b: usize, c: usize, n0: i32, n1: i32, K: i32, ldb: i32, acc: i32): void {
  const K4 = K & ~3;
  let n = n0;
  for (; n + 4 <= n1; n += 4) {
    const b0 = b + (<usize>(n * ldb) << 2);
    const b1 = b0 + (<usize>ldb << 2), b2 = b1 + (<usize>ldb << 2), b3 = b2 + (<usize>ldb << 2);
    let c0 = f32x4.splat(0), c1 = f32x4.splat(0), c2 = f32x4.splat(0), c3 = f32x4.splat(0);
    for (let k = 0; k < K4; k += 4) {
      const o = <usize>k << 2;
      const va = v128.load(a + o);
      c0 = fma(va, v128.load(b0 + o), c0); c1 = fma(va, v128.load(b1 + o), c1);
      c2 = fma(va, v128.load(b2 + o), c2); c3 = fma(va, v128.load(b3 + o), c3);
    }
    let s0 = hsum(c0), s1 = hsum(c1), s2 = hsum(c2), s3 = hsum(c3);
    for (let k = K4; k < K; k++) {
      const o = <usize>k << 2;
      const y = load<f32>(a + o);
      s0 += y * load<f32>(b0 + o); s1 += y * load<f32>(b1 + o); s2 += y * load<f32>(b2 + o); s3 += y * load<f32>(b3 + o);
    }
    const r = c + (<usize>n << 2);
    put(r, s0, acc); put(r + 4, s1, acc); put(r + 8, s2, acc); put(r + 12, s3, acc);
  }
  for (; n < n1; n++) put(c + (<usize>n << 2), dot(a, b + (<usize>(n * ldb) << 2), K), acc);
}

// gemm_nn: C[m, n] (+)= Σ_k A[m, k] · B[k, n] for columns [n0, n1) — the backward pass's dX = dY·W
// with W in its [out, in] layout. A tile of 4 rows × 16 columns: 4 broadcasts of A and 4 vector
// loads of B feed 16 fused multiply-adds.
export function gemm_nn(a: usize, b: usize, c: usize, M: i32, n0: i32, n1: i32, K: i32, lda: i32, ldb: i32, ldc: i32, acc: i32): void {
  let n = n0;
  for (; n + 16 <= n1; n += 16) {
    let m = 0;
    for (; m + 4 <= M; m += 4) {
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c02 = f32x4.splat(0), c03 = f32x4.splat(0);
      let c10 = f32x4.splat(0), c11 = f32x4.splat(0), c12 = f32x4.splat(0), c13 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c22 = f32x4.splat(0), c23 = f32x4.splat(0);
      let c30 = f32x4.splat(0), c31 = f32x4.splat(0), c32 = f32x4.splat(0), c33 = f32x4.splat(0);
      const a0 = a + (<usize>(m * lda) << 2), a1 = a0 + (<usize>lda << 2), a2 = a1 + (<usize>lda << 2), a3 = a2 + (<usize>lda << 2);
      for (let k = 0; k < K; k++) {
        const bk = b + (<usize>(k * ldb + n) << 2);
        const b0 = v128.load(bk), b1 = v128.load(bk, 16), b2 = v128.load(bk, 32), b3 = v128.load(bk, 48);
        const o = <usize>k << 2;
        let x = f32x4.splat(load<f32>(a0 + o));
        c00 = fma(x, b0, c00); c01 = fma(x, b1, c01); c02 = fma(x, b2, c02); c03 = fma(x, b3, c03);
        x = f32x4.splat(load<f32>(a1 + o));
        c10 = fma(x, b0, c10); c11 = fma(x, b1, c11); c12 = fma(x, b2, c12); c13 = fma(x, b3, c13);
        x = f32x4.splat(load<f32>(a2 + o));
        c20 = fma(x, b0, c20); c21 = fma(x, b1, c21); c22 = fma(x, b2, c22); c23 = fma(x, b3, c23);
        x = f32x4.splat(load<f32>(a3 + o));
        c30 = fma(x, b0, c30); c31 = fma(x, b1, c31); c32 = fma(x, b2, c32); c33 = fma(x, b3, c33);
      }
      const r0 = c + (<usize>(m * ldc + n) << 2);
      const r1 = r0 + (<usize>ldc << 2), r2 = r1 + (<usize>ldc << 2), r3 = r2 + (<usize>ldc << 2);
      put4(r0, c00, c01, c02, c03, acc); put4(r1, c10, c11, c12, c13, acc);
      put4(r2, c20, c21, c22, c23, acc); put4(r3, c30, c31, c32, c33, acc);
    }
    for (; m < M; m++) {
      let c0 = f32x4.splat(0), c1 = f32x4.splat(0), c2 = f32x4.splat(0), c3 = f32x4.splat(0);
      const am = a + (<usize>(m * lda) << 2);
      for (let k = 0; k < K; k++) {
        const bk = b + (<usize>(k * ldb + n) << 2);
        const x = f32x4.splat(load<f32>(am + (<usize>k << 2)));
        c0 = fma(x, v128.load(bk), c0); c1 = fma(x, v128.load(bk, 16), c1); c2 = fma(x, v128.load(bk, 32), c2); c3 = fma(x, v128.load(bk, 48), c3);
      }
      put4(c + (<usize>(m * ldc + n) << 2), c0, c1, c2, c3, acc);
    }
  }
  // leftover columns, one at a time
  for (; n < n1; n++) {
    for (let m = 0; m < M; m++) {
      let s: f32 = 0;
      const am = a + (<usize>(m * lda) << 2);
      for (let k = 0; k < K; k++) s += load<f32>(am + (<usize>k << 2)) * load<f32>(b + (<usize>(k * ldb + n) << 2));
      put(c + (<usize>(m * ldc + n) << 2), s, acc);
    }
  }
}

// gemm_tn: C[i, j] (+)= Σ_m A[m, i] · B[m, j] for rows i in [i0, i1) and all columns j < N — the
// weight gradients dW = dYᵀ·X of the LoRA matrices. Tile: 4 rows of C (a 4-wide vector of A
// broadcast lane by lane) × 16 columns.
export function gemm_tn(a: usize, b: usize, c: usize, i0: i32, i1: i32, N: i32, M: i32, lda: i32, ldb: i32, ldc: i32, acc: i32): void {
  let i = i0;
  for (; i + 4 <= i1; i += 4) {
    let j = 0;
    for (; j + 16 <= N; j += 16) {
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c02 = f32x4.splat(0), c03 = f32x4.splat(0);
      let c10 = f32x4.splat(0), c11 = f32x4.splat(0), c12 = f32x4.splat(0), c13 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c22 = f32x4.splat(0), c23 = f32x4.splat(0);
      let c30 = f32x4.splat(0), c31 = f32x4.splat(0), c32 = f32x4.splat(0), c33 = f32x4.splat(0);
      for (let m = 0; m < M; m++) {
        const bm = b + (<usize>(m * ldb + j) << 2);
        const b0 = v128.load(bm), b1 = v128.load(bm, 16), b2 = v128.load(bm, 32), b3 = v128.load(bm, 48);
        const am = a + (<usize>(m * lda + i) << 2);
        let x = f32x4.splat(load<f32>(am));
        c00 = fma(x, b0, c00); c01 = fma(x, b1, c01); c02 = fma(x, b2, c02); c03 = fma(x, b3, c03);
        x = f32x4.splat(load<f32>(am, 4));
        c10 = fma(x, b0, c10); c11 = fma(x, b1, c11); c12 = fma(x, b2, c12); c13 = fma(x, b3, c13);
        x = f32x4.splat(load<f32>(am, 8));
        c20 = fma(x, b0, c20); c21 = fma(x, b1, c21); c22 = fma(x, b2, c22); c23 = fma(x, b3, c23);
        x = f32x4.splat(load<f32>(am, 12));
        c30 = fma(x, b0, c30); c31 = fma(x, b1, c31); c32 = fma(x, b2, c32); c33 = fma(x, b3, c33);
      }
      const r0 = c + (<usize>(i * ldc + j) << 2);
      const r1 = r0 + (<usize>ldc << 2), r2 = r1 + (<usize>ldc << 2), r3 = r2 + (<usize>ldc << 2);
      put4(r0, c00, c01, c02, c03, acc); put4(r1, c10, c11, c12, c13, acc);
      put4(r2, c20, c21, c22, c23, acc); put4(r3, c30, c31, c32, c33, acc);
    }
    for (; j < N; j++) tn_scalar(a, b, c, i, i + 4, j, M, lda, ldb, ldc, acc);
  }
  for (; i < i1; i++) for (let j = 0; j < N; j++) tn_scalar(a, b, c, i, i + 1, j, M, lda, ldb, ldc, acc);
}

function tn_scalar(a: usize, b: usize, c: usize, i0: i32, i1: i32, j: i32, M: i32, lda: i32, ldb: i32, ldc: i32, acc: i32): void {
  for (let i = i0; i < i1; i++) {
    let s: f32 = 0;
    for (let m = 0; m < M; m++) s += load<f32>(a + (<usize>(m * lda + i) << 2)) * load<f32>(b + (<usize>(m * ldb + j) << 2));
    put(c + (<usize>(i * ldc + j) << 2), s, acc);
  }
}

