/*
 * The float32 matrix multiplies of the native kernel backend, written once and compiled twice
 * (gemm-avx2.c, gemm-avx512.c) with different instruction sets and register tiles; kernels.c picks
 * one at run time. The including file defines PREFIX (function name prefix), ROWS × BCOLS (rows ×
 * 8-column vectors of a broadcast tile), DOT_ROWS/DOT_COLS (the tile of the dot-product kernels).
 *
 * Exactness: in the broadcast kernels (packed forward, nn, tn) every output element is one chain
 * of fused multiply-adds over k in increasing order, one vector lane per column; in the dot kernels
 * (nt, packed_t) every output is an 8-lane chain over k, added lane by lane in a fixed order. The
 * tile an element falls in (row count, column count, thread chunk) therefore never changes its
 * bits, so a sequence's log-probs are the same whether it is computed alone (sampling) or among
 * others (scoring). Both instruction-set builds use 8-lane vectors, so they agree bit for bit too.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(PREFIX, name)
#define INLINE static inline __attribute__((always_inline))

/* a mask of the first n (0..8) lanes */
INLINE __m256i FN(lane_mask)(int n) {
  static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256((const __m256i *)(m + 8 - n));
}

/* fixed-order sum of 8 lanes: ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) */
INLINE float FN(hsum)(__m256 v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* weight types (the `dt` of the kernels below): float32, bfloat16, int8 with a float32 scale per output row */
#define DT_F32 0
#define DT_BF16 1
#define DT_I8 2

/* 8 weights at element `i` of w, as float32: stored so, bfloat16 widened exactly (the bits shifted up), or int8 converted exactly */
INLINE __m256 FN(loadw)(const void *w, long i, const int dt) {
  if (dt == DT_F32) return _mm256_loadu_ps((const float *)w + i);
  if (dt == DT_I8) return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)w + i))));
  const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* element `i` of w (of type dt) as an address */
INLINE const void *FN(at)(const void *w, long i, const int dt) {
  return dt == DT_BF16 ? (const void *)((const uint16_t *)w + i)
         : dt == DT_I8 ? (const void *)((const int8_t *)w + i)
                       : (const void *)((const float *)w + i);
}

/* elements (of type dt) from one panel of K columns to the next: int8 panels end in their 8 rows' float32 scales */
INLINE long FN(panel_step)(long K, const int dt) { return dt == DT_I8 ? K * 8 + 32 : K * 8; }

/* the first element of panel q, and (int8) the panel's 8 scales */
INLINE const void *FN(panel)(const void *p, long q, long K, const int dt) { return FN(at)(p, q * FN(panel_step)(K, dt), dt); }
INLINE const float *FN(scales)(const void *panel, long K) { return (const float *)((const int8_t *)panel + K * 8); }

/* Store (or add to C) `valid` (1..8) lanes of v at c (masked for a partial vector: no temporary arrays, so tiles stay in registers). */
INLINE void FN(put8)(float *c, __m256 v, int acc, int valid) {
  if (valid == 8) {
    if (acc) v = _mm256_add_ps(_mm256_loadu_ps(c), v);
    _mm256_storeu_ps(c, v);
    return;
  }
  const __m256i mask = FN(lane_mask)(valid);
  if (acc) v = _mm256_add_ps(_mm256_maskload_ps(c, mask), v);
  _mm256_maskstore_ps(c, mask, v);
}

/*
 * The broadcast tile: C[r, v·8 + j] (+)= Σ_k A(r, k)·B_v(k)[j] for NV vectors of 8 columns and the
 * first R (1..ROWS) rows, where A(r, k) = a[r·ars + k·aks] and B_v(k) = b[v] + k·bks; `valid` =
 * columns of the last vector that are stored. A short tile computes all ROWS rows (the missing
 * ones repeat its last row) and stores R: every index is then a constant and the accumulators
 * stay in registers.
 */
INLINE void FN(btile)(const int NV, const int BF, const float *a, long ars, long aks, const void *const *b, const float *const *sv,
                      long bks, int K, float *c, long ldc, int acc, int valid, int R) {
  /* named accumulators, not an array: GCC keeps arrays of them in memory here */
#define ROW_DECL(r)                                                                                          \
  const float *a##r = a + ((r) < R ? (r) : R - 1) * ars;                                                     \
  __m256 s##r##0 = _mm256_setzero_ps(), s##r##1 = _mm256_setzero_ps(), s##r##2 = _mm256_setzero_ps();
#define ROW_STEP(r)                                                                                          \
  {                                                                                                          \
    const __m256 x = _mm256_broadcast_ss(a##r + k * aks);                                                    \
    s##r##0 = _mm256_fmadd_ps(x, y0, s##r##0);                                                               \
    if (NV > 1) s##r##1 = _mm256_fmadd_ps(x, y1, s##r##1);                                                   \
    if (NV > 2) s##r##2 = _mm256_fmadd_ps(x, y2, s##r##2);                                                   \
  }
#define ROW_PUT(r)                                                                                           \
  if ((r) < R) {                                                                                             \
    float *cr = c + (r) * ldc;                                                                               \
    if (BF == DT_I8) {                                                                                       \
      s##r##0 = _mm256_mul_ps(s##r##0, g0);                                                                  \
      if (NV > 1) s##r##1 = _mm256_mul_ps(s##r##1, g1);                                                      \
      if (NV > 2) s##r##2 = _mm256_mul_ps(s##r##2, g2);                                                      \
    }                                                                                                        \
    FN(put8)(cr, s##r##0, acc, NV == 1 ? valid : 8);                                                         \
    if (NV > 1) FN(put8)(cr + 8, s##r##1, acc, NV == 2 ? valid : 8);                                         \
    if (NV > 2) FN(put8)(cr + 16, s##r##2, acc, valid);                                                      \
  }
  ROW_DECL(0) ROW_DECL(1) ROW_DECL(2) ROW_DECL(3) ROW_DECL(4) ROW_DECL(5)
#if ROWS > 6
  ROW_DECL(6) ROW_DECL(7)
#endif
  const void *b0 = b[0], *b1 = NV > 1 ? b[1] : b[0], *b2 = NV > 2 ? b[2] : b[0];
  for (long k = 0; k < K; k++) {
    const __m256 y0 = FN(loadw)(b0, k * bks, BF);
    const __m256 y1 = NV > 1 ? FN(loadw)(b1, k * bks, BF) : y0;
    const __m256 y2 = NV > 2 ? FN(loadw)(b2, k * bks, BF) : y0;
    ROW_STEP(0) ROW_STEP(1) ROW_STEP(2) ROW_STEP(3) ROW_STEP(4) ROW_STEP(5)
#if ROWS > 6
    ROW_STEP(6) ROW_STEP(7)
#endif
  }
  /* int8: every column's sum over k is taken on the integers, then multiplied by its row's scale */
  const __m256 g0 = BF == DT_I8 ? _mm256_loadu_ps(sv[0]) : _mm256_setzero_ps();
  const __m256 g1 = BF == DT_I8 && NV > 1 ? _mm256_loadu_ps(sv[1]) : g0, g2 = BF == DT_I8 && NV > 2 ? _mm256_loadu_ps(sv[2]) : g0;
  ROW_PUT(0) ROW_PUT(1) ROW_PUT(2) ROW_PUT(3) ROW_PUT(4) ROW_PUT(5)
#if ROWS > 6
  ROW_PUT(6) ROW_PUT(7)
#endif
#undef ROW_DECL
#undef ROW_STEP
#undef ROW_PUT
}

/*
 * Rows [0, M) in tiles of ROWS against NV column vectors. Row tile m starts at a + m·ts; inside a
 * tile, A(r, k) = a[r·ars + k·aks].
 */
#define ROW_LOOP(NV, BF)                                                                                     \
  do {                                                                                                       \
    for (long m = 0; m < M; m += ROWS)                                                                       \
      FN(btile)(NV, BF, a + m * ts, ars, aks, bv, sv, bks, K, c + m * ldc, ldc, acc, valid, M - m < ROWS ? (int)(M - m) : ROWS); \
  } while (0)

/* All M rows against nv (1..3) column vectors of weight type dt (int8: sv holds each vector's 8 scales). */
static void FN(bcols)(int nv, int dt, const float *a, long ts, long ars, long aks, const void *const *bv, const float *const *sv,
                      long bks, long M, int K, float *c, long ldc, int acc, int valid) {
  if (dt == DT_I8) {
    if (nv == 3) ROW_LOOP(3, DT_I8);
    else if (nv == 2) ROW_LOOP(2, DT_I8);
    else ROW_LOOP(1, DT_I8);
  } else if (dt == DT_BF16) {
    if (nv == 3) ROW_LOOP(3, DT_BF16);
    else if (nv == 2) ROW_LOOP(2, DT_BF16);
    else ROW_LOOP(1, DT_BF16);
  } else {
    if (nv == 3) ROW_LOOP(3, 0);
    else if (nv == 2) ROW_LOOP(2, 0);
    else ROW_LOOP(1, 0);
  }
}

/* rows of A per cache block: about 64 KiB of A per block */
static long FN(row_block)(long K) {
  long mb = (16384 / (K > 0 ? K : 1)) / ROWS * ROWS;
  return mb < ROWS ? ROWS : mb;
}

/* k steps per 64-byte cache line of one panel stream (8 weights a step), and how many lines ahead to prefetch */
#define GEMV_PREFETCH_LINES 8
INLINE long FN(line_steps)(const int dt) { return dt == DT_F32 ? 2 : dt == DT_BF16 ? 4 : 8; }

/*
 * One row against NP (4 or 8) whole panels starting at panel q: C[n] (+)= Σ_k a[k]·W[n, k] for the
 * NP·8 columns, each column one chain of fused multiply-adds over k in increasing order (the same
 * chain as in the row tiles, so the bits do not depend on the path). The panels are read as NP
 * sequential streams, each prefetched a few cache lines ahead.
 */
INLINE void FN(gemv_group)(const int NP, const int dt, const float *a, const void *p, long q, long K, float *c, int acc) {
  const void *w0 = FN(panel)(p, q, K, dt), *w1 = FN(panel)(p, q + 1, K, dt), *w2 = FN(panel)(p, q + 2, K, dt),
             *w3 = FN(panel)(p, q + 3, K, dt);
  const void *w4 = NP > 4 ? FN(panel)(p, q + 4, K, dt) : w0, *w5 = NP > 4 ? FN(panel)(p, q + 5, K, dt) : w0,
             *w6 = NP > 4 ? FN(panel)(p, q + 6, K, dt) : w0, *w7 = NP > 4 ? FN(panel)(p, q + 7, K, dt) : w0;
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  __m256 s4 = _mm256_setzero_ps(), s5 = _mm256_setzero_ps(), s6 = _mm256_setzero_ps(), s7 = _mm256_setzero_ps();
#define GEMV_STEP(k)                                                                                         \
  {                                                                                                          \
    const __m256 x = _mm256_broadcast_ss(a + (k));                                                           \
    s0 = _mm256_fmadd_ps(x, FN(loadw)(w0, (k) * 8, dt), s0);                                                 \
    s1 = _mm256_fmadd_ps(x, FN(loadw)(w1, (k) * 8, dt), s1);                                                 \
    s2 = _mm256_fmadd_ps(x, FN(loadw)(w2, (k) * 8, dt), s2);                                                 \
    s3 = _mm256_fmadd_ps(x, FN(loadw)(w3, (k) * 8, dt), s3);                                                 \
    if (NP > 4) {                                                                                            \
      s4 = _mm256_fmadd_ps(x, FN(loadw)(w4, (k) * 8, dt), s4);                                               \
      s5 = _mm256_fmadd_ps(x, FN(loadw)(w5, (k) * 8, dt), s5);                                               \
      s6 = _mm256_fmadd_ps(x, FN(loadw)(w6, (k) * 8, dt), s6);                                               \
      s7 = _mm256_fmadd_ps(x, FN(loadw)(w7, (k) * 8, dt), s7);                                               \
    }                                                                                                        \
  }
  const long L = FN(line_steps)(dt), ahead = GEMV_PREFETCH_LINES * L * 8;
  long k = 0;
  for (; k + L <= K; k += L) {
    if (GEMV_PREFETCH_LINES > 0) {
      _mm_prefetch((const char *)FN(at)(w0, k * 8 + ahead, dt), _MM_HINT_T0);
      _mm_prefetch((const char *)FN(at)(w1, k * 8 + ahead, dt), _MM_HINT_T0);
      _mm_prefetch((const char *)FN(at)(w2, k * 8 + ahead, dt), _MM_HINT_T0);
      _mm_prefetch((const char *)FN(at)(w3, k * 8 + ahead, dt), _MM_HINT_T0);
      if (NP > 4) {
        _mm_prefetch((const char *)FN(at)(w4, k * 8 + ahead, dt), _MM_HINT_T0);
        _mm_prefetch((const char *)FN(at)(w5, k * 8 + ahead, dt), _MM_HINT_T0);
        _mm_prefetch((const char *)FN(at)(w6, k * 8 + ahead, dt), _MM_HINT_T0);
        _mm_prefetch((const char *)FN(at)(w7, k * 8 + ahead, dt), _MM_HINT_T0);
      }
    }
    for (long j = 0; j < L; j++) GEMV_STEP(k + j)
  }
  for (; k < K; k++) GEMV_STEP(k)
#undef GEMV_STEP
  if (dt == DT_I8) {
    s0 = _mm256_mul_ps(s0, _mm256_loadu_ps(FN(scales)(w0, K))); s1 = _mm256_mul_ps(s1, _mm256_loadu_ps(FN(scales)(w1, K)));
    s2 = _mm256_mul_ps(s2, _mm256_loadu_ps(FN(scales)(w2, K))); s3 = _mm256_mul_ps(s3, _mm256_loadu_ps(FN(scales)(w3, K)));
    if (NP > 4) {
      s4 = _mm256_mul_ps(s4, _mm256_loadu_ps(FN(scales)(w4, K))); s5 = _mm256_mul_ps(s5, _mm256_loadu_ps(FN(scales)(w5, K)));
      s6 = _mm256_mul_ps(s6, _mm256_loadu_ps(FN(scales)(w6, K))); s7 = _mm256_mul_ps(s7, _mm256_loadu_ps(FN(scales)(w7, K)));
    }
  }
  FN(put8)(c, s0, acc, 8); FN(put8)(c + 8, s1, acc, 8); FN(put8)(c + 16, s2, acc, 8); FN(put8)(c + 24, s3, acc, 8);
  if (NP > 4) { FN(put8)(c + 32, s4, acc, 8); FN(put8)(c + 40, s5, acc, 8); FN(put8)(c + 48, s6, acc, 8); FN(put8)(c + 56, s7, acc, 8); }
}

/* C[m, n] (+)= Σ_k A[m, k]·W[n, k] for panels [q0, q1) of a packed W (see packed.ts) of weight type dt. */
INLINE void FN(packed_impl)(const float *a, const void *p, float *c, long M, long q0, long q1, long K, long N, long lda,
                            long ldc, int acc, const int dt) {
  if (M == 1) {
    /* decode: eight (then four) panels at a time, one chain each, enough independent chains to keep both FMA units busy */
    long q = q0;
    for (; q + 8 <= q1 && (q + 8) * 8 <= N; q += 8) FN(gemv_group)(8, dt, a, p, q, K, c + q * 8, acc);
    for (; q + 4 <= q1 && (q + 4) * 8 <= N; q += 4) FN(gemv_group)(4, dt, a, p, q, K, c + q * 8, acc);
    q0 = q;
    if (q0 >= q1) return;
  }
  /* blocks of about 256 KiB of panels (they stay in L2 while every row block passes over them), rows in
     blocks of about 64 KiB of A; a wide matrix is then read from memory once, not once per row block */
  const long panel_bytes = K * 8 * (dt == DT_F32 ? 4 : dt == DT_BF16 ? 2 : 1);
  long QB = (262144 / (panel_bytes > 0 ? panel_bytes : 1)) / BCOLS * BCOLS;
  if (QB < BCOLS) QB = BCOLS;
  const long mb = FN(row_block)(K);
  for (long qb0 = q0; qb0 < q1; qb0 += QB) {
    const long qb1 = qb0 + QB < q1 ? qb0 + QB : q1;
    for (long m0 = 0; m0 < M; m0 += mb) {
      const long rows = M - m0 < mb ? M - m0 : mb;
      const float *ap = a + m0 * lda;
      for (long q = qb0; q < qb1; q += BCOLS) {
        const int nv = qb1 - q < BCOLS ? (int)(qb1 - q) : BCOLS;
        const long n = q * 8;
        const void *bv[3] = {FN(panel)(p, q, K, dt), FN(panel)(p, q + 1, K, dt), FN(panel)(p, q + 2, K, dt)};
        const float *sv[3] = {FN(scales)(bv[0], K), FN(scales)(bv[1], K), FN(scales)(bv[2], K)};
        const long left = N - n - (nv - 1) * 8;
        FN(bcols)(nv, dt, ap, lda, lda, 1, bv, sv, 8, rows, (int)K, c + m0 * ldc + n, ldc, acc, left >= 8 ? 8 : (int)left);
      }
    }
  }
}

void FN(gemm_packed)(const float *a, const void *p, float *c, long M, long q0, long q1, long K, long N, long lda, long ldc,
                     int acc) {
  FN(packed_impl)(a, p, c, M, q0, q1, K, N, lda, ldc, acc, DT_F32);
}

void FN(gemm_packed_bf16)(const float *a, const void *p, float *c, long M, long q0, long q1, long K, long N, long lda,
                          long ldc, int acc) {
  FN(packed_impl)(a, p, c, M, q0, q1, K, N, lda, ldc, acc, DT_BF16);
}

void FN(gemm_packed_i8)(const float *a, const void *p, float *c, long M, long q0, long q1, long K, long N, long lda,
                        long ldc, int acc) {
  FN(packed_impl)(a, p, c, M, q0, q1, K, N, lda, ldc, acc, DT_I8);
}

/*
 * Columns [n0, n1) of C[m, n] (+)= Σ_k A(m, k)·B[k·ldb + n], with A(m, k) = a[m·ars + k·aks]: full
 * vectors by the tile (reading A through its tiled view: tile base at t + m·ts, rows tars, k taks),
 * a tail of columns one at a time.
 */
static void FN(bstripe)(const float *a, long ars, long aks, const float *t, long ts, long tars, long taks, const float *b,
                        long ldb, float *c, long ldc, long M, long n0, long n1, long K, int acc) {
  long n = n0;
  for (; n + 8 <= n1;) {
    const long w = (n1 - n) / 8;
    const int nv = w >= BCOLS ? BCOLS : (int)w;
    const void *bv[3] = {b + n, b + n + 8, b + n + 16};
    FN(bcols)(nv, DT_F32, t, ts, tars, taks, bv, NULL, ldb, M, (int)K, c + n, ldc, acc, 8);
    n += nv * 8;
  }
  /* tail columns: the same single fused chain per element, in scalar form */
  for (; n < n1; n++)
    for (long m = 0; m < M; m++) {
      float s = 0;
      for (long k = 0; k < K; k++) s = __builtin_fmaf(a[m * ars + k * aks], b[k * ldb + n], s);
      c[m * ldc + n] = acc ? c[m * ldc + n] + s : s;
    }
}

/* gemm_nn: C[m, n] (+)= Σ_k A[m, k]·B[k, n] for columns [n0, n1). */
void FN(gemm_nn)(const float *a, const float *b, float *c, long M, long n0, long n1, long K, long lda, long ldb, long ldc,
                 int acc) {
  const long mb = FN(row_block)(K);
  for (long m0 = 0; m0 < M; m0 += mb) {
    const long rows = M - m0 < mb ? M - m0 : mb;
    const float *am = a + m0 * lda;
    FN(bstripe)(am, lda, 1, am, lda, lda, 1, b, ldb, c + m0 * ldc, ldc, rows, n0, n1, K, acc);
  }
}

/*
 * gemm_tn: C[i, j] (+)= Σ_m A[m, i]·B[m, j] for rows i in [i0, i1), columns j < N (weight
 * gradients). The sum over m runs in blocks of TN_BLOCK rows added into C one after another, a
 * fixed order that depends on the shapes only (not on threads).
 */
#define TN_BLOCK 256
void FN(gemm_tn)(const float *a, const float *b, float *c, long i0, long i1, long N, long M, long lda, long ldb, long ldc,
                 int acc) {
  for (long m0 = 0; m0 < M || m0 == 0; m0 += TN_BLOCK) {
    const long mk = M - m0 < TN_BLOCK ? M - m0 : TN_BLOCK;
    const int add = m0 == 0 ? acc : 1;
    for (long i = i0; i < i1; i += ROWS * 4) {
      const long ie = i + ROWS * 4 < i1 ? i + ROWS * 4 : i1;
      /* rows i..ie of C: A(r, k) = a[k·lda + i + r] */
      const float *ai = a + m0 * lda + i;
      FN(bstripe)(ai, 1, lda, ai, 1, 1, lda, b + m0 * ldb, ldb, c + i * ldc, ldc, ie - i, 0, N, mk, add);
    }
    if (M == 0) break;
  }
}

/* Σ_k x[k]·y[k] as an 8-lane chain (the tail by a masked load), lanes added in a fixed order. */
INLINE float FN(dot)(const float *x, const float *y, long K) {
  __m256 s = _mm256_setzero_ps();
  long k = 0;
  for (; k + 8 <= K; k += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k), s);
  if (k < K) {
    const __m256i mask = FN(lane_mask)((int)(K - k));
    s = _mm256_fmadd_ps(_mm256_maskload_ps(x + k, mask), _mm256_maskload_ps(y + k, mask), s);
  }
  return FN(hsum)(s);
}

/*
 * The dot tile: C[r, j] (+)= Σ_k X_r[k]·Y_j[k] for R rows × J columns, with X_r = x + r·xs and
 * Y_j = y + j·ys read 8 at a time, steps of `step` floats between consecutive 8-float groups of X
 * and `ystep` for Y (1 group per 8 floats when contiguous; packed_t strides panels). `groups` full
 * groups, then a last group of `rem` (0..7) lanes.
 */
INLINE void FN(dtile)(const int R, const int J, const int BF, const float *x, long xs, long xstep, const void *y, long ys,
                      long ystep, const int8_t *sc, long groups, int rem, float *c, long ldc, int acc) {
  __m256 s[DOT_ROWS][DOT_COLS];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) s[r][j] = _mm256_setzero_ps();
  for (long g = 0; g < groups; g++) {
    __m256 w[DOT_COLS];
    for (int j = 0; j < J; j++) w[j] = FN(loadw)(y, j * ys + g * ystep, BF);
    if (BF == DT_I8) {
      /* the dequantized weights q·s of the 8 rows of panel g */
      const __m256 g8 = _mm256_loadu_ps((const float *)(sc + g * ystep));
      for (int j = 0; j < J; j++) w[j] = _mm256_mul_ps(w[j], g8);
    }
    for (int r = 0; r < R; r++) {
      const __m256 v = _mm256_loadu_ps(x + r * xs + g * xstep);
      for (int j = 0; j < J; j++) s[r][j] = _mm256_fmadd_ps(v, w[j], s[r][j]);
    }
  }
  if (rem) {
    const __m256i mask = FN(lane_mask)(rem);
    __m256 w[DOT_COLS];
    /* bfloat16 and int8 panels are 8 wide with zero padding: no mask needed (nor a masked narrow load) */
    for (int j = 0; j < J; j++)
      w[j] = BF != DT_F32 ? FN(loadw)(y, j * ys + groups * ystep, BF) : _mm256_maskload_ps((const float *)y + j * ys + groups * ystep, mask);
    if (BF == DT_I8) {
      const __m256 g8 = _mm256_loadu_ps((const float *)(sc + groups * ystep));
      for (int j = 0; j < J; j++) w[j] = _mm256_mul_ps(w[j], g8);
    }
    for (int r = 0; r < R; r++) {
      const __m256 v = _mm256_maskload_ps(x + r * xs + groups * xstep, mask);
      for (int j = 0; j < J; j++) s[r][j] = _mm256_fmadd_ps(v, w[j], s[r][j]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) {
      const float v = FN(hsum)(s[r][j]);
      float *o = c + r * ldc + j;
      *o = acc ? *o + v : v;
    }
}

/* every (R, J) of the dot tile up to DOT_ROWS × DOT_COLS: the full tile, else row by row in column runs of constant width */
INLINE void FN(dtile_any_t)(const int BF, int R, int J, const float *x, long xs, long xstep, const void *y, long ys, long ystep,
                            const int8_t *sc, long groups, int rem, float *c, long ldc, int acc) {
  if (R == DOT_ROWS && J == DOT_COLS) {
    FN(dtile)(DOT_ROWS, DOT_COLS, BF, x, xs, xstep, y, ys, ystep, sc, groups, rem, c, ldc, acc);
    return;
  }
  for (int r = 0; r < R; r++) {
    const float *xr = x + r * xs;
    float *cr = c + r * ldc;
    int j = 0;
    for (; j + DOT_COLS <= J; j += DOT_COLS)
      FN(dtile)(1, DOT_COLS, BF, xr, xs, xstep, FN(at)(y, j * ys, BF), ys, ystep, sc, groups, rem, cr + j, ldc, acc);
    for (; j + 2 <= J; j += 2) FN(dtile)(1, 2, BF, xr, xs, xstep, FN(at)(y, j * ys, BF), ys, ystep, sc, groups, rem, cr + j, ldc, acc);
    for (; j < J; j++) FN(dtile)(1, 1, BF, xr, xs, xstep, FN(at)(y, j * ys, BF), ys, ystep, sc, groups, rem, cr + j, ldc, acc);
  }
}

/* sc (int8 only): the scales of the first panel, ystep bytes apart from one panel's to the next */
static void FN(dtile_any)(int dt, int R, int J, const float *x, long xs, long xstep, const void *y, long ys, long ystep,
                          const int8_t *sc, long groups, int rem, float *c, long ldc, int acc) {
  if (dt == DT_I8) FN(dtile_any_t)(DT_I8, R, J, x, xs, xstep, y, ys, ystep, sc, groups, rem, c, ldc, acc);
  else if (dt == DT_BF16) FN(dtile_any_t)(DT_BF16, R, J, x, xs, xstep, y, ys, ystep, sc, groups, rem, c, ldc, acc);
  else FN(dtile_any_t)(DT_F32, R, J, x, xs, xstep, y, ys, ystep, sc, groups, rem, c, ldc, acc);
}

/*
 * A short inner dimension (K ≤ NT_SHORT_K: a LoRA product through its rank) would spend the dot tiles'
 * time on one horizontal sum per output; instead B's columns are transposed, NT_SLAB at a time, into
 * a [K × slab] block on the stack and multiplied by gemm_nn's broadcast tiles: each output is then
 * one chain over k in order. Which path an output takes depends on K only, never on M, the column
 * range or the thread, so sampling and scoring still agree bit for bit.
 */
#define NT_SHORT_K 32
#define NT_SLAB 256

/* gemm_nt: C[m, n] (+)= Σ_k A[m, k]·B[n, k] for columns [n0, n1) (B in the [out, in] layout). */
void FN(gemm_nt)(const float *a, const float *b, float *c, long M, long n0, long n1, long K, long lda, long ldb, long ldc,
                 int acc) {
  if (K > 0 && K <= NT_SHORT_K) {
    float bt[NT_SHORT_K * NT_SLAB];
    for (long s0 = n0; s0 < n1; s0 += NT_SLAB) {
      const long w = n1 - s0 < NT_SLAB ? n1 - s0 : NT_SLAB;
      for (long n = 0; n < w; n++)
        for (long k = 0; k < K; k++) bt[k * w + n] = b[(s0 + n) * ldb + k];
      FN(gemm_nn)(a, bt, c + s0, M, 0, w, K, lda, w, ldc, acc);
    }
    return;
  }
  const long groups = K / 8;
  const int rem = (int)(K % 8);
  for (long m = 0; m < M; m += DOT_ROWS) {
    const int R = M - m < DOT_ROWS ? (int)(M - m) : DOT_ROWS;
    for (long n = n0; n < n1; n += DOT_COLS) {
      const int J = n1 - n < DOT_COLS ? (int)(n1 - n) : DOT_COLS;
      FN(dtile_any)(DT_F32, R, J, a + m * lda, lda, 8, b + n * ldb, ldb, 8, NULL, groups, rem, c + m * ldc + n, ldc, acc);
    }
  }
}

/*
 * gemm_packed_t: C[m, i] (+)= Σ_n A[m, n]·W[n, i] for columns [i0, i1) — the backward pass's
 * dX = dY·W with W packed (K = in, N = out). For panel q the 8 weights W[8q..8q+8, i] are
 * contiguous, so each output is an 8-lane dot over panels. Panels go in blocks of a fixed size
 * (from K only) whose partial sums are added into C, so a block of weights stays in cache while
 * every row tile passes over it.
 */
static void FN(packed_t_impl)(const float *a, const void *p, float *c, long M, long i0, long i1, long K, long N, long lda,
                              long ldc, int acc, int dt) {
  const long Q = N / 8;
  const int rem = (int)(N % 8);
  long QB = 65536 / (K > 0 ? K : 1);
  if (QB < 1) QB = 1;
  for (long qa = 0; qa < Q || qa == 0; qa += QB) {
    const long qb = qa + QB < Q ? qa + QB : Q;
    const int last = qb == Q;
    const int add = qa == 0 ? acc : 1;
    for (long m = 0; m < M; m += DOT_ROWS) {
      const int R = M - m < DOT_ROWS ? (int)(M - m) : DOT_ROWS;
      for (long i = i0; i < i1; i += DOT_COLS) {
        const int J = i1 - i < DOT_COLS ? (int)(i1 - i) : DOT_COLS;
        const void *panel = FN(panel)(p, qa, K, dt);
        FN(dtile_any)(dt, R, J, a + m * lda + qa * 8, lda, 8, FN(at)(panel, i * 8, dt), 8, FN(panel_step)(K, dt),
                      (const int8_t *)FN(scales)(panel, K), qb - qa, last ? rem : 0, c + m * ldc + i, ldc, add);
      }
    }
    if (Q == 0) break;
  }
}

/*
 * gemm_packed_t for many rows (training's dX = dY·W): W's rows are unpacked, PT_BLOCK at a time and
 * only the columns [i0, i1) this call computes, into a row-major float32 block (bfloat16 widened,
 * int8 as q·s), and gemm_nn's broadcast tiles multiply dY's matching columns by it — the forward
 * product's speed instead of the dot tiles'. Each output is one chain over a block's rows, blocks
 * added in order: a fixed order that depends on N only (not on M, the threads or the column range).
 * The block lives in a per-thread buffer that grows as needed (the only state the addon keeps).
 */
#define PT_BLOCK 256
#define PT_MIN_ROWS 8
#define PT_SLAB 96
#define PT_ROWS 512
#define PT_LDA (PT_BLOCK + 16)
static __thread float *FN(pt_buf);
static __thread long FN(pt_cap);

/* returns 0 (nothing done) when the buffers cannot be had; the caller then uses the dot tiles */
static int FN(packed_t_unpacked)(const float *a, const void *p, float *c, long M, long i0, long i1, long K, long N, long lda,
                                 long ldc, int acc, const int dt) {
  const long need = PT_BLOCK * PT_SLAB + PT_ROWS * PT_LDA;
  if (FN(pt_cap) < need) {
    float *b = (float *)realloc(FN(pt_buf), (size_t)need * sizeof(float));
    if (!b) return 0;
    FN(pt_buf) = b;
    FN(pt_cap) = need;
  }
  float *S = FN(pt_buf), *Ab = FN(pt_buf) + PT_BLOCK * PT_SLAB;
  for (long m0 = 0; m0 < M; m0 += PT_ROWS) {
    const long mr = M - m0 < PT_ROWS ? M - m0 : PT_ROWS;
    for (long n0 = 0; n0 < N; n0 += PT_BLOCK) {
      const long nb = N - n0 < PT_BLOCK ? N - n0 : PT_BLOCK;
      /* dY's columns of this block, copied to a short fixed stride (a long stride such as 3072 floats puts
         the tile's rows in the same L1 sets) */
      for (long m = 0; m < mr; m++) memcpy(Ab + m * PT_LDA, a + (m0 + m) * lda + n0, (size_t)nb * sizeof(float));
      /* column slabs of at most PT_SLAB keep the unpacked block (≤ 96 KiB) in the core's L2 cache */
      for (long s0 = i0; s0 < i1; s0 += PT_SLAB) {
        const long s1 = s0 + PT_SLAB < i1 ? s0 + PT_SLAB : i1, w = s1 - s0;
        /* panel q's 8 weights of column i are contiguous: one vector, spread over 8 rows of the block */
        for (long q = n0 / 8; q * 8 < n0 + nb; q++) {
          const void *panel = FN(panel)(p, q, K, dt);
          const __m256 g = dt == DT_I8 ? _mm256_loadu_ps(FN(scales)(panel, K)) : _mm256_set1_ps(1);
          const int rows = n0 + nb - q * 8 < 8 ? (int)(n0 + nb - q * 8) : 8;
          float *dst = S + (q * 8 - n0) * w;
          for (long i = s0; i < s1; i++) {
            __m256 v = FN(loadw)(panel, i * 8, dt);
            if (dt == DT_I8) v = _mm256_mul_ps(v, g);
            float t[8];
            _mm256_storeu_ps(t, v);
            for (int j = 0; j < rows; j++) dst[j * w + (i - s0)] = t[j];
          }
        }
        FN(gemm_nn)(Ab, S, c + m0 * ldc + s0, mr, 0, w, nb, PT_LDA, w, ldc, n0 == 0 ? acc : 1);
      }
    }
  }
  if (N == 0 && !acc)
    for (long m = 0; m < M; m++) memset(c + m * ldc + i0, 0, (size_t)(i1 - i0) * sizeof(float));
  return 1;
}

INLINE void FN(packed_t_any)(const float *a, const void *p, float *c, long M, long i0, long i1, long K, long N, long lda,
                             long ldc, int acc, const int dt) {
  if (M >= PT_MIN_ROWS && FN(packed_t_unpacked)(a, p, c, M, i0, i1, K, N, lda, ldc, acc, dt)) return;
  FN(packed_t_impl)(a, p, c, M, i0, i1, K, N, lda, ldc, acc, dt);
}

void FN(gemm_packed_t)(const float *a, const void *p, float *c, long M, long i0, long i1, long K, long N, long lda, long ldc,
                       int acc) {
  FN(packed_t_any)(a, p, c, M, i0, i1, K, N, lda, ldc, acc, DT_F32);
}

void FN(gemm_packed_t_bf16)(const float *a, const void *p, float *c, long M, long i0, long i1, long K, long N, long lda,
                            long ldc, int acc) {
  FN(packed_t_any)(a, p, c, M, i0, i1, K, N, lda, ldc, acc, DT_BF16);
}

void FN(gemm_packed_t_i8)(const float *a, const void *p, float *c, long M, long i0, long i1, long K, long N, long lda,
                          long ldc, int acc) {
  FN(packed_t_any)(a, p, c, M, i0, i1, K, N, lda, ldc, acc, DT_I8);
}
