/*
 * Causal grouped-query attention over float32 key/value blocks, forward and backward, AVX2 + FMA:
 * the attention of LoRA and full-parameter training (every position of each sequence is a row) and
 * of serving with float32 caches. A cache block is [positions × nKv·hd] float32, row j the keys
 * (or values) of absolute position j. Operands are addressed as byte offsets from `base` (the
 * engine's shared WebAssembly memory).
 *
 * Both passes are small matrix products once the scores of a whole tile of queries are at hand:
 * keys are transposed once per block into [hd × keys], so a score is one fused-multiply-add chain
 * over the head dimension with eight keys in the lanes of a vector, and P·V, dS·K, dSᵀ·Q and Pᵀ·dO
 * broadcast one weight against sixteen output dimensions. The WebAssembly kernels instead sum a
 * horizontal dot product per (query, key); here four queries share every load.
 *
 * Exactness (forward): every query's result is the same whatever tile it is in (one decode row, or
 * among a prefill chunk's rows). Scores are per-element chains over d in order; keys are taken in
 * blocks of KB aligned to absolute positions with a running softmax; keys a query must not see get
 * probability exactly 0 and blocks it must not see leave its state as it was, so a longer tile only
 * adds exact no-ops. Sampling and scoring with float32 caches therefore agree bit for bit. The
 * backward needs no such property (it is only ever called on whole training sequences).
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "avx2-math.h"

/* keys per block of the forward pass (blocks start at multiples of KB) */
#define KB 64
/* the most query vectors of one forward unit (tile rows × query heads per key/value head) */
#define MAX_QF 48

/* s[i·lds + c] = Σ_d a[i·lda + d]·bt[d·ldb + c] for c in [0, 16), i < QB: one chain per element, d in order */
#define DOTS_T(QB)                                                                                               \
  INLINE void dots_t##QB(const float *a, long lda, const float *bt, long ldb, long hd, float *s, long lds) {     \
    __m256 acc[QB][2];                                                                                           \
    for (int i = 0; i < QB; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();                                    \
    for (long d = 0; d < hd; d++) {                                                                              \
      const __m256 b0 = _mm256_loadu_ps(bt + d * ldb), b1 = _mm256_loadu_ps(bt + d * ldb + 8);                   \
      for (int i = 0; i < QB; i++) {                                                                             \
        const __m256 x = _mm256_broadcast_ss(a + i * lda + d);                                                   \
        acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);                                                           \
        acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);                                                           \
      }                                                                                                          \
    }                                                                                                            \
    for (int i = 0; i < QB; i++) {                                                                               \
      _mm256_storeu_ps(s + i * lds, acc[i][0]);                                                                  \
      _mm256_storeu_ps(s + i * lds + 8, acc[i][1]);                                                              \
    }                                                                                                            \
  }
DOTS_T(4)
DOTS_T(1)

/*
 * c[i·ldc + c16] += Σ_t a[i·lda + t·ast]·b[t·ldb + c16] for 16 columns, t in [t0, t1) in order,
 * i < QB: each output element is one chain starting from its value in c.
 */
#define AXPY_T(QB)                                                                                               \
  INLINE void axpy_t##QB(const float *a, long lda, long ast, const float *b, long ldb, long t0, long t1, float *c, long ldc) { \
    __m256 acc[QB][2];                                                                                           \
    for (int i = 0; i < QB; i++) {                                                                               \
      acc[i][0] = _mm256_loadu_ps(c + i * ldc);                                                                  \
      acc[i][1] = _mm256_loadu_ps(c + i * ldc + 8);                                                              \
    }                                                                                                            \
    for (long t = t0; t < t1; t++) {                                                                             \
      const __m256 b0 = _mm256_loadu_ps(b + t * ldb), b1 = _mm256_loadu_ps(b + t * ldb + 8);                     \
      for (int i = 0; i < QB; i++) {                                                                             \
        const __m256 x = _mm256_broadcast_ss(a + i * lda + t * ast);                                             \
        acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);                                                           \
        acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);                                                           \
      }                                                                                                          \
    }                                                                                                            \
    for (int i = 0; i < QB; i++) {                                                                               \
      _mm256_storeu_ps(c + i * ldc, acc[i][0]);                                                                  \
      _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);                                                              \
    }                                                                                                            \
  }
AXPY_T(4)
AXPY_T(1)

/* axpy_t##QB over 8 columns (one vector): the last eight of a head size that is an odd multiple of 8 */
#define AXPY8_T(QB)                                                                                              \
  INLINE void axpy8_t##QB(const float *a, long lda, long ast, const float *b, long ldb, long t0, long t1, float *c, long ldc) { \
    __m256 acc[QB];                                                                                              \
    for (int i = 0; i < QB; i++) acc[i] = _mm256_loadu_ps(c + i * ldc);                                         \
    for (long t = t0; t < t1; t++) {                                                                             \
      const __m256 b0 = _mm256_loadu_ps(b + t * ldb);                                                            \
      for (int i = 0; i < QB; i++) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + i * lda + t * ast), b0, acc[i]); \
    }                                                                                                            \
    for (int i = 0; i < QB; i++) _mm256_storeu_ps(c + i * ldc, acc[i]);                                          \
  }
AXPY8_T(4)
AXPY8_T(1)

/*
 * axpy over all hd columns of b and c (hd a multiple of 8): sixteen at a time, then eight. Every
 * output element is still one chain over t in order, whichever width computed it.
 */
#define AXPY_HD(QB)                                                                                              \
  INLINE void axpy_hd##QB(const float *a, long lda, long ast, const float *b, long ldb, long t0, long t1, float *c, long ldc, long hd) { \
    long d = 0;                                                                                                  \
    for (; d + 16 <= hd; d += 16) axpy_t##QB(a, lda, ast, b + d, ldb, t0, t1, c + d, ldc);                       \
    if (d < hd) axpy8_t##QB(a, lda, ast, b + d, ldb, t0, t1, c + d, ldc);                                        \
  }
AXPY_HD(4)
AXPY_HD(1)

/* dst[d·ld + j] = rows[j·ldr + d] for j < n, d < hd; columns [n, n16) zero */
static void transpose(float *dst, long ld, const float *rows, long ldr, long n, long n16, long hd) {
  for (long j = 0; j < n; j++)
    for (long d = 0; d < hd; d++) dst[d * ld + j] = rows[j * ldr + d];
  for (long d = 0; d < hd; d++)
    for (long j = n; j < n16; j++) dst[d * ld + j] = 0;
}

/*
 * Forward units [u0, u1). `tiles` per tile: first row, row count, position of the first row (rows at
 * consecutive positions of one cache), byte offsets of the cache's key and value blocks. Unit u is
 * key/value head u / nTiles of tile u % nTiles. Query row r of head h is at q + r·ldq + h·hd, its
 * output at out + r·nHeads·hd + h·hd. hd is a multiple of 8, at most 256.
 */
void attention_f32(const char *base, const float *q, long ldq, float *out, const int32_t *tiles, long u0, long u1, long nTiles,
                   long nHeads, long nKv, long hd, long window, float scale) {
  const long G = nHeads / nKv, kvDim = nKv * hd;
  float qs[MAX_QF * hd], o[MAX_QF * hd], s[MAX_QF * KB], kt[hd * KB];
  float m[MAX_QF], l[MAX_QF], alpha[MAX_QF];
  for (long u = u0; u < u1; u++) {
    const long kvh = u / nTiles;
    const int32_t *t = tiles + 5 * (u % nTiles);
    const long row0 = t[0], rows = t[1], pos0 = t[2];
    const float *K = (const float *)(base + (uint32_t)t[3]) + kvh * hd, *V = (const float *)(base + (uint32_t)t[4]) + kvh * hd;
    /* query i = (row i / G, head kvh·G + i % G); padded with zero queries to a multiple of 4 */
    const long nq = rows * G, NQ = (nq + 3) & ~3L;
    for (long i = 0; i < NQ; i++) {
      if (i < nq) memcpy(qs + i * hd, q + (row0 + i / G) * ldq + (kvh * G + i % G) * hd, hd * sizeof(float));
      else memset(qs + i * hd, 0, hd * sizeof(float));
      m[i] = -INFINITY; l[i] = 0;
    }
    memset(o, 0, NQ * hd * sizeof(float));
    const long last = pos0 + rows - 1;
    const long first = window > 0 ? (pos0 - window + 1 > 0 ? pos0 - window + 1 : 0) : 0;
    for (long b = first / KB; b <= last / KB; b++) {
      const long j0 = b * KB, nk = last + 1 - j0 < KB ? last + 1 - j0 : KB, nk16 = (nk + 15) & ~15L;
      transpose(kt, KB, K + j0 * kvDim, kvDim, nk, nk16, hd);
      for (long i = 0; i < NQ; i += 4)
        for (long c = 0; c < nk16; c += 16) dots_t4(qs + i * hd, hd, kt + c, KB, hd, s + i * KB + c, KB);
      /* running softmax per query: what it sees of this block is [lo, hi] (empty: its state is untouched) */
      for (long i = 0; i < NQ; i++) {
        float *si = s + i * KB;
        const long pos = pos0 + (i < nq ? i : 0) / G;
        const long start = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
        const int lo = (int)((start > j0 ? start : j0) - j0), hi = (int)((pos < j0 + nk - 1 ? pos : j0 + nk - 1) - j0);
        if (i >= nq || hi < lo) {
          alpha[i] = 1;
          memset(si, 0, nk16 * sizeof(float));
          continue;
        }
        alpha[i] = softmax_block(si, nk16, lo, hi, scale, &m[i], &l[i]);
      }
      /* o = o·alpha + P·V over the block's keys in order */
      for (long i = 0; i < NQ; i++) {
        const __m256 a = _mm256_set1_ps(alpha[i]);
        for (long d = 0; d < hd; d += 8) _mm256_storeu_ps(o + i * hd + d, _mm256_mul_ps(_mm256_loadu_ps(o + i * hd + d), a));
      }
      for (long i = 0; i < NQ; i += 4)
        axpy_hd4(s + i * KB, KB, 1, V + j0 * kvDim, kvDim, 0, nk, o + i * hd, hd, hd);
    }
    for (long i = 0; i < nq; i++) {
      const __m256 inv = _mm256_set1_ps(1.0f / l[i]);
      float *dst = out + (row0 + i / G) * nHeads * hd + (kvh * G + i % G) * hd;
      for (long d = 0; d < hd; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_loadu_ps(o + i * hd + d), inv));
    }
  }
}

/*
 * Probabilities (in p) and ∂loss/∂scores (in ds, which holds dP = dO·V on entry) of query row a at
 * position pos, whose keys are the columns [0, NK) at positions kst + column; d = dO·o.
 */
static void softmax_backward_row(float *p, float *ds, long NK, long pos, long kst, long window, float scale, float d) {
  const long start = window > 0 ? (pos - window + 1 > kst ? pos - window + 1 : kst) : kst;
  const int lo = (int)(start - kst), hi = (int)(pos - kst);
  /* a running softmax over one block from an empty state leaves e^(x − max) in p and their sum in l */
  float m = -INFINITY, l = 0;
  softmax_block(p, NK, lo, hi, scale, &m, &l);
  const __m256 inv = _mm256_set1_ps(1.0f / l), vd = _mm256_set1_ps(d), vscale = _mm256_set1_ps(scale), zero = _mm256_setzero_ps();
  for (long j = 0; j < NK; j += 8) {
    const __m256 pj = _mm256_mul_ps(_mm256_loadu_ps(p + j), inv);
    _mm256_storeu_ps(p + j, pj);
    const __m256 dsj = _mm256_mul_ps(_mm256_mul_ps(pj, _mm256_sub_ps(_mm256_loadu_ps(ds + j), vd)), vscale);
    _mm256_storeu_ps(ds + j, _mm256_blendv_ps(zero, dsj, seen8(j, lo, hi)));
  }
}

/* one 8-lane chain per lane of a·b over hd (a multiple of 8), lanes summed in a fixed order */
INLINE float dot(const float *a, const float *b, long hd) {
  __m256 acc = _mm256_setzero_ps();
  for (long d = 0; d < hd; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc);
  return hsum8(acc);
}

/*
 * Backward units [p0, p1) of training rows. Unit p = (sequence p / nKv, key/value head p % nKv): it
 * owns that head's columns of the sequence's dK/dV blocks and the dq columns of the query heads that
 * read it. `table` per row: byte offsets of K, V, dK, dV, then the row's position; `segs` per
 * sequence: first row and row count, its rows at consecutive positions. With P = softmax(S):
 *   dP = dO·Vᵀ, dS = P∘(dP − rowsum(dO∘O))·scale, dq = dS·K, dK += dSᵀ·Q, dV += Pᵀ·dO.
 * Returns 0, or −1 when the scratch memory could not be allocated (nothing written then).
 */
int attention_backward_f32(const char *base, float *dq, long lddq, const float *dout, const float *out, const float *q, long ldq,
                           const int32_t *table, const int32_t *segs, long p0, long p1, long nHeads, long nKv, long hd, long window,
                           float scale) {
  const long G = nHeads / nKv, kvDim = nKv * hd, qDim = nHeads * hd;
  for (long u = p0; u < p1; u++) {
    const long seq = u / nKv, kvh = u % nKv;
    const long row0 = segs[2 * seq], n = segs[2 * seq + 1];
    const int32_t *t = table + 5 * row0;
    const long kvo = kvh * hd, pos0 = t[4], last = pos0 + n - 1;
    const long kst = window > 0 ? (pos0 - window + 1 > 0 ? pos0 - window + 1 : 0) : 0, nk = last - kst + 1, NK = (nk + 15) & ~15L;
    const float *K = (const float *)(base + (uint32_t)t[0]) + kst * kvDim + kvo, *V = (const float *)(base + (uint32_t)t[1]) + kst * kvDim + kvo;
    float *dK = (float *)(base + (uint32_t)t[2]) + kst * kvDim + kvo, *dV = (float *)(base + (uint32_t)t[3]) + kst * kvDim + kvo;
    float *scratch = aligned_alloc(32, (size_t)(2 * hd * NK + 2 * n * NK) * sizeof(float));
    if (!scratch) return -1;
    float *kt = scratch, *vt = kt + hd * NK, *P = vt + hd * NK, *dS = P + n * NK;
    transpose(kt, NK, K, kvDim, nk, NK, hd);
    transpose(vt, NK, V, kvDim, nk, NK, hd);
    for (long h = kvh * G; h < (kvh + 1) * G; h++) {
      const float *qh = q + row0 * ldq + h * hd, *oh = out + row0 * qDim + h * hd, *doh = dout + row0 * qDim + h * hd;
      float *dqh = dq + row0 * lddq + h * hd;
      /* scores and dP of the keys each group of rows can see (the rest of a row is masked below) */
      long a = 0;
      for (; a + 4 <= n; a += 4) {
        const long cols = pos0 + a + 3 - kst + 1;
        for (long c = 0; c < cols; c += 16) {
          dots_t4(qh + a * ldq, ldq, kt + c, NK, hd, P + a * NK + c, NK);
          dots_t4(doh + a * qDim, qDim, vt + c, NK, hd, dS + a * NK + c, NK);
        }
      }
      for (; a < n; a++) {
        const long cols = pos0 + a - kst + 1;
        for (long c = 0; c < cols; c += 16) {
          dots_t1(qh + a * ldq, ldq, kt + c, NK, hd, P + a * NK + c, NK);
          dots_t1(doh + a * qDim, qDim, vt + c, NK, hd, dS + a * NK + c, NK);
        }
      }
      for (a = 0; a < n; a++) softmax_backward_row(P + a * NK, dS + a * NK, NK, pos0 + a, kst, window, scale, dot(doh + a * qDim, oh + a * qDim, hd));
      /* dq = dS·K (row a sees keys [0, pos0 + a − kst]; past them dS is 0) */
      for (a = 0; a < n; a++) memset(dqh + a * lddq, 0, hd * sizeof(float));
      for (a = 0; a + 4 <= n; a += 4)
        axpy_hd4(dS + a * NK, NK, 1, K, kvDim, 0, pos0 + a + 3 - kst + 1, dqh + a * lddq, lddq, hd);
      for (; a < n; a++)
        axpy_hd1(dS + a * NK, NK, 1, K, kvDim, 0, pos0 + a - kst + 1, dqh + a * lddq, lddq, hd);
      /* dK += dSᵀ·Q, dV += Pᵀ·dO (key column c is seen by rows from kst + c − pos0 on) */
      long c = 0;
      for (; c + 4 <= nk; c += 4) {
        const long a0 = kst + c - pos0 > 0 ? kst + c - pos0 : 0;
        axpy_hd4(dS + c, 1, NK, qh, ldq, a0, n, dK + c * kvDim, kvDim, hd);
        axpy_hd4(P + c, 1, NK, doh, qDim, a0, n, dV + c * kvDim, kvDim, hd);
      }
      for (; c < nk; c++) {
        const long a0 = kst + c - pos0 > 0 ? kst + c - pos0 : 0;
        axpy_hd1(dS + c, 1, NK, qh, ldq, a0, n, dK + c * kvDim, kvDim, hd);
        axpy_hd1(P + c, 1, NK, doh, qDim, a0, n, dV + c * kvDim, kvDim, hd);
      }
    }
    free(scratch);
  }
  return 0;
}
