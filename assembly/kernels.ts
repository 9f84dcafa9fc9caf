// Compute kernels (matrix multiply, attention) for the embedded engine, compiled to WebAssembly SIMD by AssemblyScript
// (scripts/build-wasm.ts). Every pointer is a byte offset into the shared memory that the engine's
// arena owns; strides are in floats. Threads call these on disjoint column ranges [n0, n1) of C.
//
// gemm_nt: C[m, n] (+)= Σ_k A[m, k] · B[n, k]   (B in Hugging Face's [out, in] weight layout)
// Both operands stream along k, so the inner loop is a SIMD dot product of 4 rows of A against
// 4 rows of B: 16 accumulators, 8 loads per 16 fused multiply-adds.

@inline function fma(a: v128, b: v128, c: v128): v128 {
  return f32x4.relaxed_madd(a, b, c);
}

@inline function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

@inline function put(c: usize, v: f32, acc: i32): void {
  if (acc) store<f32>(c, load<f32>(c) + v);
  else store<f32>(c, v);
}

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

@inline function dot(x: usize, y: usize, K: i32): f32 {
  const K4 = K & ~3;
  let s = f32x4.splat(0);
  for (let k = 0; k < K4; k += 4) s = fma(v128.load(x + (<usize>k << 2)), v128.load(y + (<usize>k << 2)), s);
  let r = hsum(s);
  for (let k = K4; k < K; k++) r += load<f32>(x + (<usize>k << 2)) * load<f32>(y + (<usize>k << 2));
  return r;
}

/**
 * The unnormalised attention weights of one query head: scratch[j - start] = e^(q·k_j·scale − max)
 * for j in [start, pos]; returns 1 / their sum. Shared by the forward and backward passes, so both
 * see the same probabilities.
 */
@inline function softmax_scores(q: usize, K: usize, kvDim: i32, kvo: i32, start: i32, pos: i32, hd: i32, scale: f32, scratch: usize): f32 {
  let mx: f32 = -Infinity;
  for (let j = start; j <= pos; j++) {
    const s = dot(q, K + (<usize>(j * kvDim + kvo) << 2), hd) * scale;
    store<f32>(scratch + (<usize>(j - start) << 2), s);
    if (s > mx) mx = s;
  }
  let sum: f32 = 0;
  for (let j = start; j <= pos; j++) {
    const a = scratch + (<usize>(j - start) << 2);
    const e = Mathf.exp(load<f32>(a) - mx);
    store<f32>(a, e);
    sum += e;
  }
  return 1 / sum;
}

// Causal grouped-query attention for query heads [p0, p1) of a batch, where pair p is
// (row p / nHeads, head p % nHeads). `table` holds, per row, the byte offsets of that row's key
// and value cache blocks and its position. Scores go to this thread's `scratch`.
// out[r, h·hd + d] = Σ_j softmax_j(q·k_j · scale) v_j[d], j over [pos - window + 1, pos].
export function attention(qkv: usize, ldq: i32, out: usize, table: usize, p0: i32, p1: i32, nHeads: i32, nKv: i32, hd: i32, window: i32, scale: f32, scratch: usize): void {
  const group = nHeads / nKv;
  const kvDim = nKv * hd;
  const hd4 = hd & ~3;
  for (let p = p0; p < p1; p++) {
    const r = p / nHeads, h = p % nHeads;
    const t = table + (<usize>(r * 3) << 2);
    const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), pos = load<i32>(t, 8);
    const start = window > 0 ? max(0, pos - window + 1) : 0;
    const q = qkv + (<usize>(r * ldq + h * hd) << 2);
    const kvo = (h / group) * hd;
    const inv = softmax_scores(q, K, kvDim, kvo, start, pos, hd, scale, scratch);
    const o = out + (<usize>(r * nHeads * hd + h * hd) << 2);
    for (let d = 0; d < hd; d += 4) if (d < hd4) v128.store(o + (<usize>d << 2), f32x4.splat(0));
    for (let d = hd4; d < hd; d++) store<f32>(o + (<usize>d << 2), 0);
    for (let j = start; j <= pos; j++) {
      const w = load<f32>(scratch + (<usize>(j - start) << 2)) * inv;
      const vw = f32x4.splat(w);
      const vj = V + (<usize>(j * kvDim + kvo) << 2);
      for (let d = 0; d < hd4; d += 4) {
        const od = o + (<usize>d << 2);
        v128.store(od, fma(vw, v128.load(vj + (<usize>d << 2)), v128.load(od)));
      }
      for (let d = hd4; d < hd; d++) store<f32>(o + (<usize>d << 2), load<f32>(o + (<usize>d << 2)) + w * load<f32>(vj + (<usize>d << 2)));
    }
  }
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

@inline function put4(p: usize, v0: v128, v1: v128, v2: v128, v3: v128, acc: i32): void {
  if (acc) {
    v0 = f32x4.add(v0, v128.load(p)); v1 = f32x4.add(v1, v128.load(p, 16));
    v2 = f32x4.add(v2, v128.load(p, 32)); v3 = f32x4.add(v3, v128.load(p, 48));
  }
  v128.store(p, v0); v128.store(p, v1, 16); v128.store(p, v2, 32); v128.store(p, v3, 48);
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

// Backward of `attention` for training rows (every position of each sequence is a row).
// Work unit p = (sequence p / nKv, key/value head p % nKv): it owns that head's columns of the
// sequence's dK/dV blocks and the dq columns of the query heads that read it, so threads never
// write the same memory. `table` per row: K, V, dK, dV byte offsets and position; `segs` per
// sequence: first row and row count. With P = softmax(S), o = Σ P_j v_j and incoming dO:
//   dP_j = dO·v_j,  dS_j = P_j (dP_j − dO·o),  dq = Σ dS_j k_j·scale,  dk_j += dS_j q·scale,  dv_j += P_j dO.
export function attention_backward(dq: usize, lddq: i32, dout: usize, out: usize, q: usize, ldq: i32, table: usize, segs: usize, p0: i32, p1: i32, nHeads: i32, nKv: i32, hd: i32, window: i32, scale: f32, scratch: usize): void {
  const group = nHeads / nKv;
  const kvDim = nKv * hd;
  const qDim = nHeads * hd;
  for (let p = p0; p < p1; p++) {
    const seq = p / nKv, kvh = p % nKv;
    const row0 = load<i32>(segs + (<usize>(seq * 2) << 2)), rows = load<i32>(segs + (<usize>(seq * 2 + 1) << 2));
    const kvo = kvh * hd;
    for (let r = row0; r < row0 + rows; r++) {
      const t = table + (<usize>(r * 5) << 2);
      const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), dK = <usize>load<u32>(t, 8), dV = <usize>load<u32>(t, 12), pos = load<i32>(t, 16);
      const start = window > 0 ? max(0, pos - window + 1) : 0;
      for (let h = kvh * group; h < (kvh + 1) * group; h++) {
        const qh = q + (<usize>(r * ldq + h * hd) << 2);
        const oh = out + (<usize>(r * qDim + h * hd) << 2);
        const doh = dout + (<usize>(r * qDim + h * hd) << 2);
        const dqh = dq + (<usize>(r * lddq + h * hd) << 2);
        const inv = softmax_scores(qh, K, kvDim, kvo, start, pos, hd, scale, scratch);
        const D = dot(doh, oh, hd);
        for (let d = 0; d < hd; d++) store<f32>(dqh + (<usize>d << 2), 0);
        for (let j = start; j <= pos; j++) {
          const P = load<f32>(scratch + (<usize>(j - start) << 2)) * inv;
          const ko = <usize>(j * kvDim + kvo) << 2;
          const dP = dot(doh, V + ko, hd);
          const dS = P * (dP - D) * scale;
          axpy(dV + ko, doh, P, hd);
          axpy(dqh, K + ko, dS, hd);
          axpy(dK + ko, qh, dS, hd);
        }
      }
    }
  }
}

/** y[0..n) += a·x[0..n) */
@inline function axpy(y: usize, x: usize, a: f32, n: i32): void {
  const n4 = n & ~3;
  const va = f32x4.splat(a);
  for (let d = 0; d < n4; d += 4) {
    const o = <usize>d << 2;
    v128.store(y + o, fma(va, v128.load(x + o), v128.load(y + o)));
  }
  for (let d = n4; d < n; d++) store<f32>(y + (<usize>d << 2), load<f32>(y + (<usize>d << 2)) + a * load<f32>(x + (<usize>d << 2)));
}

// e^x for four lanes: x = n·ln2 + r with |r| ≤ ln2/2, e^r by its degree-6 Taylor polynomial
// (relative error < 2e-7 on that interval), 2^n built in the exponent bits. Inputs are clamped to
// the float32 range of e^x.
@inline function exp4(x: v128): v128 {
  x = f32x4.max(f32x4.min(x, f32x4.splat(88.3762626647949)), f32x4.splat(-87.3365478515625));
  const n = f32x4.nearest(f32x4.mul(x, f32x4.splat(1.44269504088896341)));
  let r = f32x4.sub(x, f32x4.mul(n, f32x4.splat(0.693359375)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(-2.12194440e-4)));
  let p = f32x4.splat(1.0 / 720.0);
  p = fma(p, r, f32x4.splat(1.0 / 120.0));
  p = fma(p, r, f32x4.splat(1.0 / 24.0));
  p = fma(p, r, f32x4.splat(1.0 / 6.0));
  p = fma(p, r, f32x4.splat(0.5));
  p = fma(p, r, f32x4.splat(1.0));
  p = fma(p, r, f32x4.splat(1.0));
  const pow2n = i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(n), i32x4.splat(127)), 23);
  return f32x4.mul(p, pow2n);
}

// Row-wise log-sum-exp of logits/T for rows [r0, r1) of a [rows × V] block: lse[r] = log Σ_v e^(x_v/T).
export function rows_lse(logits: usize, r0: i32, r1: i32, V: i32, invT: f32, lse: usize): void {
  const V4 = V & ~3;
  for (let r = r0; r < r1; r++) {
    const row = logits + (<usize>(r * V) << 2);
    let vm = f32x4.splat(-Infinity);
    for (let v = 0; v < V4; v += 4) vm = f32x4.max(vm, v128.load(row + (<usize>v << 2)));
    let mx = max(max(f32x4.extract_lane(vm, 0), f32x4.extract_lane(vm, 1)), max(f32x4.extract_lane(vm, 2), f32x4.extract_lane(vm, 3)));
    for (let v = V4; v < V; v++) mx = max(mx, load<f32>(row + (<usize>v << 2)));
    const m = mx * invT;
    const vT = f32x4.splat(invT), vmT = f32x4.splat(m);
    let acc = f32x4.splat(0);
    for (let v = 0; v < V4; v += 4) acc = f32x4.add(acc, exp4(f32x4.sub(f32x4.mul(v128.load(row + (<usize>v << 2)), vT), vmT)));
    let s = hsum(acc);
    for (let v = V4; v < V; v++) s += Mathf.exp(load<f32>(row + (<usize>v << 2)) * invT - m);
    store<f32>(lse + (<usize>r << 2), m + Mathf.log(s));
  }
}

// Overwrites rows [r0, r1) of logits with −coef[r]·softmax(x/T): the gradient of coef[r]·logp
// with respect to the logits, except the +coef[r] at the target (the caller adds it).
export function rows_softmax_grad(logits: usize, r0: i32, r1: i32, V: i32, invT: f32, lse: usize, coef: usize): void {
  const V4 = V & ~3;
  for (let r = r0; r < r1; r++) {
    const row = logits + (<usize>(r * V) << 2);
    const c = load<f32>(coef + (<usize>r << 2)), l = load<f32>(lse + (<usize>r << 2));
    const vT = f32x4.splat(invT), vl = f32x4.splat(l), vc = f32x4.splat(-c);
    for (let v = 0; v < V4; v += 4) {
      const p = row + (<usize>v << 2);
      v128.store(p, f32x4.mul(vc, exp4(f32x4.sub(f32x4.mul(v128.load(p), vT), vl))));
    }
    for (let v = V4; v < V; v++) {
      const p = row + (<usize>v << 2);
      store<f32>(p, -c * Mathf.exp(load<f32>(p) * invT - l));
    }
  }
}

// ---- packed weights ----
// A frozen weight W [N = out, K = in] is stored as panels of 8 output rows: P[p][k][j] = W[8p + j][k]
// (the last panel zero-padded). The forward product C = A·Wᵀ then broadcasts one A value against
// two contiguous vectors of a panel: a 6 × 8 tile keeps 12 accumulators + 3 operands in V8's 16
// vector registers, and every panel load is sequential.

// C[m, n] (+)= Σ_k A[m, k]·W[n, k] for panels [q0, q1) (columns [8·q0, min(8·q1, N))).
export function gemm_packed(a: usize, p: usize, c: usize, M: i32, q0: i32, q1: i32, K: i32, N: i32, lda: i32, ldc: i32, acc: i32): void {
  const sa = <usize>lda << 2;
  if (M === 1) {
    // decode: one row against four panels at once (8 independent accumulator chains); each
    // output is still summed over k in the same order as in the row tiles below
    let q = q0;
    for (; q + 4 <= q1 && (q + 4) * 8 <= N; q += 4) {
      const p0 = p + (<usize>(q * K * 8) << 2), ps = <usize>(K * 8) << 2;
      let c0 = f32x4.splat(0), c1 = f32x4.splat(0), c2 = f32x4.splat(0), c3 = f32x4.splat(0);
      let c4 = f32x4.splat(0), c5 = f32x4.splat(0), c6 = f32x4.splat(0), c7 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const x = v128.load32_splat(a + (<usize>k << 2));
        const o = p0 + (<usize>(k * 8) << 2);
        c0 = fma(x, v128.load(o), c0); c1 = fma(x, v128.load(o, 16), c1);
        c2 = fma(x, v128.load(o + ps), c2); c3 = fma(x, v128.load(o + ps, 16), c3);
        c4 = fma(x, v128.load(o + 2 * ps), c4); c5 = fma(x, v128.load(o + 2 * ps, 16), c5);
        c6 = fma(x, v128.load(o + 3 * ps), c6); c7 = fma(x, v128.load(o + 3 * ps, 16), c7);
      }
      const r = c + (<usize>(q * 8) << 2);
      put8(r, c0, c1, acc, true, 8); put8(r + 32, c2, c3, acc, true, 8); put8(r + 64, c4, c5, acc, true, 8); put8(r + 96, c6, c7, acc, true, 8);
    }
    q0 = q;
    if (q0 >= q1) return;
  }
  for (let q = q0; q < q1; q++) {
    const panel = p + (<usize>(q * K * 8) << 2);
    const n = q * 8;
    const full = n + 8 <= N;
    let m = 0;
    for (; m + 6 <= M; m += 6) {
      const a0 = a + (<usize>(m * lda) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
      let c40 = f32x4.splat(0), c41 = f32x4.splat(0), c50 = f32x4.splat(0), c51 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + (<usize>(k * 8) << 2);
        const y0 = v128.load(bk), y1 = v128.load(bk, 16);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(o + sa); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
        x = v128.load32_splat(o + 2 * sa); c20 = fma(x, y0, c20); c21 = fma(x, y1, c21);
        x = v128.load32_splat(o + 3 * sa); c30 = fma(x, y0, c30); c31 = fma(x, y1, c31);
        x = v128.load32_splat(o + 4 * sa); c40 = fma(x, y0, c40); c41 = fma(x, y1, c41);
        x = v128.load32_splat(o + 5 * sa); c50 = fma(x, y0, c50); c51 = fma(x, y1, c51);
      }
      const r = c + (<usize>(m * ldc + n) << 2), t = <usize>ldc << 2;
      put8(r, c00, c01, acc, full, N - n); put8(r + t, c10, c11, acc, full, N - n); put8(r + 2 * t, c20, c21, acc, full, N - n);
      put8(r + 3 * t, c30, c31, acc, full, N - n); put8(r + 4 * t, c40, c41, acc, full, N - n); put8(r + 5 * t, c50, c51, acc, full, N - n);
    }
    for (; m + 2 <= M; m += 2) {
      const a0 = a + (<usize>(m * lda) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + (<usize>(k * 8) << 2);
        const y0 = v128.load(bk), y1 = v128.load(bk, 16);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(o + sa); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
      }
      const r = c + (<usize>(m * ldc + n) << 2);
      put8(r, c00, c01, acc, full, N - n); put8(r + (<usize>ldc << 2), c10, c11, acc, full, N - n);
    }
    for (; m < M; m++) {
      // one row (decode): the same single accumulator per column as the tiles above, so a row's
      // result never depends on how many rows are computed with it (sampling and scoring agree)
      const a0 = a + (<usize>(m * lda) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + (<usize>(k * 8) << 2);
        const x = v128.load32_splat(a0 + (<usize>k << 2));
        c00 = fma(x, v128.load(bk), c00); c01 = fma(x, v128.load(bk, 16), c01);
      }
      put8(c + (<usize>(m * ldc + n) << 2), c00, c01, acc, full, N - n);
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
  // here K = in (columns of W, = columns of C) and N = out (rows of W, = columns of A).
  // Panels are taken in blocks of about 1 MB, reused by every row tile before the next block
  // (summing into C), so W is read from memory once rather than once per row tile.
  const Q = N >> 3;
  const QB = max(1, 32768 / max(K, 1));
  if (Q === 0) { packed_t_block(a, p, c, M, i0, i1, K, lda, ldc, acc, 0, 0, N & 7); return; }
  for (let qa = 0; qa < Q; qa += QB) {
    const qb = min(Q, qa + QB);
    packed_t_block(a, p, c, M, i0, i1, K, lda, ldc, qa === 0 ? acc : 1, qa, qb, qb === Q ? N & 7 : 0);
  }
}

/** gemm_packed_t over panels [qa, qb) plus, when `rem` > 0, the first `rem` rows of panel qb. */
function packed_t_block(a: usize, p: usize, c: usize, M: i32, i0: i32, i1: i32, K: i32, lda: i32, ldc: i32, acc: i32, qa: i32, qb: i32, rem: i32): void {
  const Q = qb;
  const panelStride = <usize>(K * 8) << 2;
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
        const w = p + <usize>q * panelStride + (<usize>(i * 8) << 2);
        const ao = a0 + (<usize>(q * 8) << 2);
        for (let h: usize = 0; h < 32; h += 16) {
          const w0 = v128.load(w + h), w1 = v128.load(w + 32 + h), w2 = v128.load(w + 64 + h), w3 = v128.load(w + 96 + h);
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
        const w = p + <usize>Q * panelStride + (<usize>(i * 8) << 2);
        for (let j = 0; j < rem; j++) {
          const x0 = load<f32>(a0 + (<usize>(Q * 8 + j) << 2)), x1 = load<f32>(a0 + sa + (<usize>(Q * 8 + j) << 2));
          const x2 = load<f32>(a0 + 2 * sa + (<usize>(Q * 8 + j) << 2)), x3 = load<f32>(a0 + 3 * sa + (<usize>(Q * 8 + j) << 2));
          const w0 = load<f32>(w + (<usize>j << 2)), w1 = load<f32>(w + 32 + (<usize>j << 2)), w2 = load<f32>(w + 64 + (<usize>j << 2)), w3 = load<f32>(w + 96 + (<usize>j << 2));
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
    for (; i < i1; i++) for (let mm = m; mm < m + 4; mm++) put(c + (<usize>(mm * ldc + i) << 2), packed_col_dot(a + (<usize>(mm * lda) << 2), p, i, K, qa, qb, rem), acc);
  }
  for (; m < M; m++) for (let i = i0; i < i1; i++) put(c + (<usize>(m * ldc + i) << 2), packed_col_dot(a + (<usize>(m * lda) << 2), p, i, K, qa, qb, rem), acc);
}

/** Σ_n a[n]·W[n, i] over panels [qa, qb) (+ `rem` rows of panel qb) with W packed. */
function packed_col_dot(a: usize, p: usize, i: i32, K: i32, qa: i32, qb: i32, rem: i32): f32 {
  let s = f32x4.splat(0);
  for (let q = qa; q < qb; q++) {
    const w = p + (<usize>(q * K * 8 + i * 8) << 2), ao = a + (<usize>(q * 8) << 2);
    s = fma(v128.load(ao), v128.load(w), s);
    s = fma(v128.load(ao, 16), v128.load(w, 16), s);
  }
  let r = hsum(s);
  for (let j = 0; j < rem; j++) r += load<f32>(a + (<usize>(qb * 8 + j) << 2)) * load<f32>(p + (<usize>(qb * K * 8 + i * 8 + j) << 2));
  return r;
}

// SwiGLU over rows [r0, r1) of the fused [gate | up] activations: out = silu(g)·u, and its backward
// dg = dout·u·σ(g)(1 + g(1 − σ(g))), du = dout·silu(g).
export function swiglu(out: usize, gu: usize, r0: i32, r1: i32, I: i32): void {
  const I4 = I & ~3;
  const one = f32x4.splat(1);
  for (let r = r0; r < r1; r++) {
    const g0 = gu + (<usize>(r * 2 * I) << 2), u0 = g0 + (<usize>I << 2), o0 = out + (<usize>(r * I) << 2);
    for (let i = 0; i < I4; i += 4) {
      const o = <usize>i << 2;
      const g = v128.load(g0 + o);
      const sig = f32x4.div(one, f32x4.add(one, exp4(f32x4.neg(g))));
      v128.store(o0 + o, f32x4.mul(f32x4.mul(g, sig), v128.load(u0 + o)));
    }
    for (let i = I4; i < I; i++) {
      const o = <usize>i << 2;
      const g = load<f32>(g0 + o);
      store<f32>(o0 + o, (g / (1 + Mathf.exp(-g))) * load<f32>(u0 + o));
    }
  }
}

export function swiglu_backward(dgu: usize, dout: usize, gu: usize, r0: i32, r1: i32, I: i32): void {
  const I4 = I & ~3;
  const one = f32x4.splat(1);
  for (let r = r0; r < r1; r++) {
    const g0 = gu + (<usize>(r * 2 * I) << 2), u0 = g0 + (<usize>I << 2), d0 = dout + (<usize>(r * I) << 2);
    const dg0 = dgu + (<usize>(r * 2 * I) << 2), du0 = dg0 + (<usize>I << 2);
    for (let i = 0; i < I4; i += 4) {
      const o = <usize>i << 2;
      const g = v128.load(g0 + o), u = v128.load(u0 + o), d = v128.load(d0 + o);
      const sig = f32x4.div(one, f32x4.add(one, exp4(f32x4.neg(g))));
      v128.store(dg0 + o, f32x4.mul(f32x4.mul(f32x4.mul(d, u), sig), f32x4.add(one, f32x4.mul(g, f32x4.sub(one, sig)))));
      v128.store(du0 + o, f32x4.mul(d, f32x4.mul(g, sig)));
    }
    for (let i = I4; i < I; i++) {
      const o = <usize>i << 2;
      const g = load<f32>(g0 + o), u = load<f32>(u0 + o), d = load<f32>(d0 + o);
      const sig: f32 = 1 / (1 + Mathf.exp(-g));
      store<f32>(dg0 + o, d * u * sig * (1 + g * (1 - sig)));
      store<f32>(du0 + o, d * g * sig);
    }
  }
}
