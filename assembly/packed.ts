import { fma, hsum, put } from './common';

// ---- packed weights ----
// W is the weight type: f32; u16 for bfloat16 panels (same layout, 2 bytes a value), widened to
// float32 exactly (the bits shifted up 16) as they are loaded; or i8 for int8 panels (1 byte a
// value, converted exactly), each panel followed by its 8 rows' float32 scales (packed.ts). The
// forward product sums a[k]·q[n, k] over k and multiplies by row n's scale at the end; the backward
// product uses the dequantized weights q·s.

/** lanes [4h, 4h + 4) of the 8 weights at p (h = 0 or 1) as float32 (int8: before the scale) */
@inline function wLanes<W>(p: usize, h: i32): v128 {
  if (sizeof<W>() == 4) return v128.load(p + (<usize>h << 4));
  if (sizeof<W>() == 1) {
    const b = v128.load8x8_s(p);
    return f32x4.convert_i32x4_s(h ? i32x4.extend_high_i16x8_s(b) : i32x4.extend_low_i16x8_s(b));
  }
  const v = v128.load(p);
  return i32x4.shl(h ? i32x4.extend_high_i16x8_u(v) : i32x4.extend_low_i16x8_u(v), 16);
}

/** the 8 weights at p as loaded (float32: the first 4; bfloat16: 8 halves; int8: 8 bytes widened to 16 bits) */
@inline function wRaw<W>(p: usize): v128 {
  if (sizeof<W>() == 1) return v128.load8x8_s(p);
  return v128.load(p);
}

/** lanes [4h, 4h + 4) as float32 of the weights `raw` = wRaw(p) (int8: before the scale) */
@inline function wHalf<W>(raw: v128, p: usize, h: i32): v128 {
  if (sizeof<W>() == 4) return h ? v128.load(p, 16) : raw;
  if (sizeof<W>() == 1) return f32x4.convert_i32x4_s(h ? i32x4.extend_high_i16x8_s(raw) : i32x4.extend_low_i16x8_s(raw));
  return i32x4.shl(h ? i32x4.extend_high_i16x8_u(raw) : i32x4.extend_low_i16x8_u(raw), 16);
}

/** byte offset of weight element i */
@inline function wo<W>(i: i32): usize { return <usize>i * sizeof<W>(); }

/** bytes from one panel of K columns to the next (int8 panels end in 8 float32 scales) */
@inline function pstride<W>(K: i32): usize { return sizeof<W>() == 1 ? <usize>K * 8 + 32 : wo<W>(K * 8); }

/** int8: v times lanes [4h, 4h + 4) of the scales of the panel at `panel`; other types: v */
@inline function scaled<W>(v: v128, panel: usize, K: i32, h: i32): v128 {
  if (sizeof<W>() != 1) return v;
  return f32x4.mul(v, v128.load(panel + <usize>K * 8 + (<usize>h << 4)));
}

/** the dequantizing factor of element j (0..7) of the panel at `panel`: its row's scale for int8, else 1 */
@inline function scaleAt<W>(panel: usize, K: i32, j: i32): f32 {
  if (sizeof<W>() != 1) return 1;
  return load<f32>(panel + <usize>K * 8 + (<usize>j << 2));
}

/** weight element i at p as float32 (scalar; int8: before the scale) */
@inline function wAt<W>(p: usize, i: i32): f32 {
  if (sizeof<W>() == 4) return load<f32>(p + (<usize>i << 2));
  if (sizeof<W>() == 1) return <f32>load<i8>(p + <usize>i);
  return reinterpret<f32>(<u32>load<u16>(p + (<usize>i << 1)) << 16);
}

// A frozen weight W [N = out, K = in] is stored as panels of 8 output rows: P[p][k][j] = W[8p + j][k]
// (the last panel zero-padded). The forward product C = A·Wᵀ then broadcasts one A value against
// two contiguous vectors of a panel: a 6 × 8 tile keeps 12 accumulators + 3 operands in V8's 16
// vector registers, and every panel load is sequential.

// C[m, n] (+)= Σ_k A[m, k]·W[n, k] for panels [q0, q1) (columns [8·q0, min(8·q1, N))).
export function gemm_packed(a: usize, p: usize, c: usize, M: i32, q0: i32, q1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  packed_impl<f32>(a, p, c, M, q0, q1, K, N, lda, ldc, acc);
}

/** gemm_packed with bfloat16 panels */
export function gemm_packed_bf16(a: usize, p: usize, c: usize, M: i32, q0: i32, q1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  packed_impl<u16>(a, p, c, M, q0, q1, K, N, lda, ldc, acc);
}

/** gemm_packed with int8 panels */
export function gemm_packed_i8(a: usize, p: usize, c: usize, M: i32, q0: i32, q1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  packed_impl<i8>(a, p, c, M, q0, q1, K, N, lda, ldc, acc);
}

@inline function packed_impl<W>(a: usize, p: usize, c: usize, M: i32, q0: i32, q1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  const sa = <usize>lda << 2;
  if (M === 1) {
    // decode: one row against four panels at once (8 independent accumulator chains); each
    // output is still summed over k in the same order as in the row tiles below
    let q = q0;
    for (; q + 4 <= q1 && (q + 4) * 8 <= N; q += 4) {
      const ps = pstride<W>(K), p0 = p + <usize>q * ps;
      let c0 = f32x4.splat(0), c1 = f32x4.splat(0), c2 = f32x4.splat(0), c3 = f32x4.splat(0);
      let c4 = f32x4.splat(0), c5 = f32x4.splat(0), c6 = f32x4.splat(0), c7 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const x = v128.load32_splat(a + (<usize>k << 2));
        const o = p0 + wo<W>(k * 8);
        // each panel's 8 weights are loaded once (bf16, int8) and split into their two halves
        let r = wRaw<W>(o);
        c0 = fma(x, wHalf<W>(r, o, 0), c0); c1 = fma(x, wHalf<W>(r, o, 1), c1);
        r = wRaw<W>(o + ps);
        c2 = fma(x, wHalf<W>(r, o + ps, 0), c2); c3 = fma(x, wHalf<W>(r, o + ps, 1), c3);
        r = wRaw<W>(o + 2 * ps);
        c4 = fma(x, wHalf<W>(r, o + 2 * ps, 0), c4); c5 = fma(x, wHalf<W>(r, o + 2 * ps, 1), c5);
        r = wRaw<W>(o + 3 * ps);
        c6 = fma(x, wHalf<W>(r, o + 3 * ps, 0), c6); c7 = fma(x, wHalf<W>(r, o + 3 * ps, 1), c7);
      }
      c0 = scaled<W>(c0, p0, K, 0); c1 = scaled<W>(c1, p0, K, 1); c2 = scaled<W>(c2, p0 + ps, K, 0); c3 = scaled<W>(c3, p0 + ps, K, 1);
      c4 = scaled<W>(c4, p0 + 2 * ps, K, 0); c5 = scaled<W>(c5, p0 + 2 * ps, K, 1); c6 = scaled<W>(c6, p0 + 3 * ps, K, 0); c7 = scaled<W>(c7, p0 + 3 * ps, K, 1);
      const r = c + (<usize>(q * 8) << 2);
      put8(r, c0, c1, acc, true, 8); put8(r + 32, c2, c3, acc, true, 8); put8(r + 64, c4, c5, acc, true, 8); put8(r + 96, c6, c7, acc, true, 8);
    }
    q0 = q;
    if (q0 >= q1) return;
  }
  for (let q = q0; q < q1; q++) {
    const panel = p + <usize>q * pstride<W>(K);
    const n = q * 8;
    const full = n + 8 <= N;
    let m = 0;
    for (; m + 6 <= M; m += 6) {
      const a0 = a + (<usize>(m * lda) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
      let c40 = f32x4.splat(0), c41 = f32x4.splat(0), c50 = f32x4.splat(0), c51 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + wo<W>(k * 8);
        const raw = wRaw<W>(bk), y0 = wHalf<W>(raw, bk, 0), y1 = wHalf<W>(raw, bk, 1);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(o + sa); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
        x = v128.load32_splat(o + 2 * sa); c20 = fma(x, y0, c20); c21 = fma(x, y1, c21);
        x = v128.load32_splat(o + 3 * sa); c30 = fma(x, y0, c30); c31 = fma(x, y1, c31);
        x = v128.load32_splat(o + 4 * sa); c40 = fma(x, y0, c40); c41 = fma(x, y1, c41);
        x = v128.load32_splat(o + 5 * sa); c50 = fma(x, y0, c50); c51 = fma(x, y1, c51);
      }
      c00 = scaled<W>(c00, panel, K, 0); c01 = scaled<W>(c01, panel, K, 1); c10 = scaled<W>(c10, panel, K, 0); c11 = scaled<W>(c11, panel, K, 1);
      c20 = scaled<W>(c20, panel, K, 0); c21 = scaled<W>(c21, panel, K, 1); c30 = scaled<W>(c30, panel, K, 0); c31 = scaled<W>(c31, panel, K, 1);
      c40 = scaled<W>(c40, panel, K, 0); c41 = scaled<W>(c41, panel, K, 1); c50 = scaled<W>(c50, panel, K, 0); c51 = scaled<W>(c51, panel, K, 1);
      const r = c + (<usize>(m * ldc + n) << 2), t = <usize>ldc << 2;
      put8(r, c00, c01, acc, full, N - n); put8(r + t, c10, c11, acc, full, N - n); put8(r + 2 * t, c20, c21, acc, full, N - n);
      put8(r + 3 * t, c30, c31, acc, full, N - n); put8(r + 4 * t, c40, c41, acc, full, N - n); put8(r + 5 * t, c50, c51, acc, full, N - n);
    }
    for (; m + 2 <= M; m += 2) {
      const a0 = a + (<usize>(m * lda) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + wo<W>(k * 8);
        const raw = wRaw<W>(bk), y0 = wHalf<W>(raw, bk, 0), y1 = wHalf<W>(raw, bk, 1);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(o + sa); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
      }
      c00 = scaled<W>(c00, panel, K, 0); c01 = scaled<W>(c01, panel, K, 1); c10 = scaled<W>(c10, panel, K, 0); c11 = scaled<W>(c11, panel, K, 1);
      const r = c + (<usize>(m * ldc + n) << 2);
      put8(r, c00, c01, acc, full, N - n); put8(r + (<usize>ldc << 2), c10, c11, acc, full, N - n);
    }
    for (; m < M; m++) {
      // one row (decode): the same single accumulator per column as the tiles above, so a row's
      // result never depends on how many rows are computed with it (sampling and scoring agree)
      const a0 = a + (<usize>(m * lda) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + wo<W>(k * 8);
        const x = v128.load32_splat(a0 + (<usize>k << 2));
        const raw = wRaw<W>(bk); c00 = fma(x, wHalf<W>(raw, bk, 0), c00); c01 = fma(x, wHalf<W>(raw, bk, 1), c01);
      }
      put8(c + (<usize>(m * ldc + n) << 2), scaled<W>(c00, panel, K, 0), scaled<W>(c01, panel, K, 1), acc, full, N - n);
    }
  }
}

/** Store (or add) 8 values; a partial last panel stores only its `valid` columns. */
@inline function put8(r: usize, v0: v128, v1: v128, acc: i32, full: bool, valid: i32): void {
  if (full) {
    if (acc) { v0 = f32x4.add(v0, v128.load(r)); v1 = f32x4.add(v1, v128.load(r, 16)); }
    v128.store(r, v0); v128.store(r, v1, 16);
    return;
  }
  const tmp = memory.data(32, 16);
  v128.store(tmp, v0); v128.store(tmp, v1, 16);
  for (let j = 0; j < valid; j++) {
    const x = load<f32>(tmp + (<usize>j << 2));
    store<f32>(r + (<usize>j << 2), acc ? load<f32>(r + (<usize>j << 2)) + x : x);
  }
}

// C[m, i] (+)= Σ_n A[m, n]·W[n, i] for columns [i0, i1) — the backward pass's dX = dY·W with W
// packed. For each panel, the 8 weights W[8q..8q+8, i] are contiguous, so each output is a sum of
// 8-wide dot products: a 4 × 4 tile of (row, column) dot products, like gemm_nt.
export function gemm_packed_t(a: usize, p: usize, c: usize, M: i32, i0: i32, i1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  packed_t_impl<f32>(a, p, c, M, i0, i1, K, N, lda, ldc, acc);
}

/** gemm_packed_t with bfloat16 panels */
export function gemm_packed_t_bf16(a: usize, p: usize, c: usize, M: i32, i0: i32, i1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  packed_t_impl<u16>(a, p, c, M, i0, i1, K, N, lda, ldc, acc);
}

/** gemm_packed_t with int8 panels (the weights dequantized, q·s, as they are loaded) */
export function gemm_packed_t_i8(a: usize, p: usize, c: usize, M: i32, i0: i32, i1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  packed_t_impl<i8>(a, p, c, M, i0, i1, K, N, lda, ldc, acc);
}

@inline function packed_t_impl<W>(a: usize, p: usize, c: usize, M: i32, i0: i32, i1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  // here K = in (columns of W, = columns of C) and N = out (rows of W, = columns of A).
  // Panels are taken in blocks of about 1 MB, reused by every row tile before the next block
  // (summing into C), so W is read from memory once rather than once per row tile.
  const Q = N >> 3;
  const QB = max(1, 32768 / max(K, 1));
  if (Q === 0) { packed_t_block<W>(a, p, c, M, i0, i1, K, lda, ldc, acc, 0, 0, N & 7); return; }
  for (let qa = 0; qa < Q; qa += QB) {
    const qb = min(Q, qa + QB);
    packed_t_block<W>(a, p, c, M, i0, i1, K, lda, ldc, qa === 0 ? acc : 1, qa, qb, qb === Q ? N & 7 : 0);
  }
}

/** gemm_packed_t over panels [qa, qb) plus, when `rem` > 0, the first `rem` rows of panel qb. */
function packed_t_block<W>(a: usize, p: usize, c: usize, M: i32, i0: i32, i1: i32, K: i32, lda: i32, ldc: i32, acc: i32, qa: i32, qb: i32, rem: i32): void {
  const Q = qb;
  const panelStride = pstride<W>(K), colStride = wo<W>(8);
  let m = 0;
  for (; m + 4 <= M; m += 4) {
    const a0 = a + (<usize>(m * lda) << 2), sa = <usize>lda << 2;
    let i = i0;
    for (; i + 4 <= i1; i += 4) {
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c02 = f32x4.splat(0), c03 = f32x4.splat(0);
      let c10 = f32x4.splat(0), c11 = f32x4.splat(0), c12 = f32x4.splat(0), c13 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c22 = f32x4.splat(0), c23 = f32x4.splat(0);
      let c30 = f32x4.splat(0), c31 = f32x4.splat(0), c32 = f32x4.splat(0), c33 = f32x4.splat(0);
      for (let q = qa; q < qb; q++) {
        const pq = p + <usize>q * panelStride, w = pq + wo<W>(i * 8);
        const ao = a0 + (<usize>(q * 8) << 2);
        for (let hh = 0; hh < 2; hh++) {
          const h = <usize>hh << 4;
          const w0 = scaled<W>(wLanes<W>(w, hh), pq, K, hh), w1 = scaled<W>(wLanes<W>(w + colStride, hh), pq, K, hh);
          const w2 = scaled<W>(wLanes<W>(w + 2 * colStride, hh), pq, K, hh), w3 = scaled<W>(wLanes<W>(w + 3 * colStride, hh), pq, K, hh);
          let x = v128.load(ao + h);
          c00 = fma(x, w0, c00); c01 = fma(x, w1, c01); c02 = fma(x, w2, c02); c03 = fma(x, w3, c03);
          x = v128.load(ao + sa + h);
          c10 = fma(x, w0, c10); c11 = fma(x, w1, c11); c12 = fma(x, w2, c12); c13 = fma(x, w3, c13);
          x = v128.load(ao + 2 * sa + h);
          c20 = fma(x, w0, c20); c21 = fma(x, w1, c21); c22 = fma(x, w2, c22); c23 = fma(x, w3, c23);
          x = v128.load(ao + 3 * sa + h);
          c30 = fma(x, w0, c30); c31 = fma(x, w1, c31); c32 = fma(x, w2, c32); c33 = fma(x, w3, c33);
        }
      }
      let s00 = hsum(c00), s01 = hsum(c01), s02 = hsum(c02), s03 = hsum(c03);
      let s10 = hsum(c10), s11 = hsum(c11), s12 = hsum(c12), s13 = hsum(c13);
      let s20 = hsum(c20), s21 = hsum(c21), s22 = hsum(c22), s23 = hsum(c23);
      let s30 = hsum(c30), s31 = hsum(c31), s32 = hsum(c32), s33 = hsum(c33);
      if (rem) {
        // the partial last panel, scalar (its padding rows are zero, but A has no columns there)
        const pq = p + <usize>Q * panelStride, w = pq + wo<W>(i * 8);
        for (let j = 0; j < rem; j++) {
          const x0 = load<f32>(a0 + (<usize>(Q * 8 + j) << 2)), x1 = load<f32>(a0 + sa + (<usize>(Q * 8 + j) << 2));
          const x2 = load<f32>(a0 + 2 * sa + (<usize>(Q * 8 + j) << 2)), x3 = load<f32>(a0 + 3 * sa + (<usize>(Q * 8 + j) << 2));
          const g = scaleAt<W>(pq, K, j);
          const w0 = wAt<W>(w, j) * g, w1 = wAt<W>(w + colStride, j) * g, w2 = wAt<W>(w + 2 * colStride, j) * g, w3 = wAt<W>(w + 3 * colStride, j) * g;
          s00 += x0 * w0; s01 += x0 * w1; s02 += x0 * w2; s03 += x0 * w3;
          s10 += x1 * w0; s11 += x1 * w1; s12 += x1 * w2; s13 += x1 * w3;
          s20 += x2 * w0; s21 += x2 * w1; s22 += x2 * w2; s23 += x2 * w3;
          s30 += x3 * w0; s31 += x3 * w1; s32 += x3 * w2; s33 += x3 * w3;
        }
      }
      const r0 = c + (<usize>(m * ldc + i) << 2), t = <usize>ldc << 2;
      put(r0, s00, acc); put(r0 + 4, s01, acc); put(r0 + 8, s02, acc); put(r0 + 12, s03, acc);
      put(r0 + t, s10, acc); put(r0 + t + 4, s11, acc); put(r0 + t + 8, s12, acc); put(r0 + t + 12, s13, acc);
      put(r0 + 2 * t, s20, acc); put(r0 + 2 * t + 4, s21, acc); put(r0 + 2 * t + 8, s22, acc); put(r0 + 2 * t + 12, s23, acc);
      put(r0 + 3 * t, s30, acc); put(r0 + 3 * t + 4, s31, acc); put(r0 + 3 * t + 8, s32, acc); put(r0 + 3 * t + 12, s33, acc);
    }
    for (; i < i1; i++) for (let mm = m; mm < m + 4; mm++) put(c + (<usize>(mm * ldc + i) << 2), packed_col_dot<W>(a + (<usize>(mm * lda) << 2), p, i, K, qa, qb, rem), acc);
  }
  for (; m < M; m++) for (let i = i0; i < i1; i++) put(c + (<usize>(m * ldc + i) << 2), packed_col_dot<W>(a + (<usize>(m * lda) << 2), p, i, K, qa, qb, rem), acc);
}

/** Σ_n a[n]·W[n, i] over panels [qa, qb) (+ `rem` rows of panel qb) with W packed. */
function packed_col_dot<W>(a: usize, p: usize, i: i32, K: i32, qa: i32, qb: i32, rem: i32): f32 {
  let s = f32x4.splat(0);
  const ps = pstride<W>(K);
  for (let q = qa; q < qb; q++) {
    const pq = p + <usize>q * ps, w = pq + wo<W>(i * 8), ao = a + (<usize>(q * 8) << 2);
    s = fma(v128.load(ao), scaled<W>(wLanes<W>(w, 0), pq, K, 0), s);
    s = fma(v128.load(ao, 16), scaled<W>(wLanes<W>(w, 1), pq, K, 1), s);
  }
  let r = hsum(s);
  const pb = p + <usize>qb * ps;
  for (let j = 0; j < rem; j++) r += load<f32>(a + (<usize>(qb * 8 + j) << 2)) * (wAt<W>(pb + wo<W>(i * 8), j) * scaleAt<W>(pb, K, j));
  return r;
}

