/*
 * Causal grouped-query attention over paged bfloat16 KV caches (src/engine/embedded/kv-pages.ts),
 * AVX2 + FMA (also what AVX-512 machines run: one build, so every machine gives the same bits).
 *
 * A page holds `P` positions of every layer: [layer][kv head][K, V][P][hd] bfloat16, so the keys
 * (and the values) of one head of one block are one contiguous run. A work unit is one
 * key/value head of one tile: up to `tileRows` consecutive query rows of one sequence (positions
 * pos0, pos0 + 1, …). The unit reads each key/value block (one page, P positions) once, widened to
 * float32, for all the tile's rows and all the query heads that share that key/value head, and
 * keeps a running (online) softmax: a short new suffix over a long cached prefix reads the prefix
 * once per tile instead of once per (row, head).
 *
 * Keys and values are widened in registers, 16 at a time: one 32-byte load holds 8 pairs of
 * bfloat16; the pair's low half shifted up is the even dimension's float32, the pair with its low
 * half cleared is the odd one's. Query vectors and outputs are kept in that even/odd order per
 * group of 16 dimensions (queries are reordered once per tile, outputs once at the end).
 *
 * Exactness: every query's result is the same whatever tile it is in (alone as a decode row, or
 * among the rows of a prefill chunk) and whatever else is in the batch. Each score is one
 * fused-multiply-add chain over the head dimension in 8 lanes, summed in a fixed tree; blocks are
 * aligned to absolute positions (pages); keys a query must not see get probability exactly 0 and
 * blocks it must not see leave its state untouched (scale 1, nothing added), so a longer tile only
 * adds exact no-ops. Sampling (decode rows) and scoring (prefill rows) therefore agree bit for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "avx2-math.h"

/* lanes l0..l7 of each of v0..v7 summed as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), lane i of the result from vi */
INLINE __m256 hsum8x8(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4, __m256 v5, __m256 v6, __m256 v7) {
  const __m256 t0 = _mm256_hadd_ps(v0, v1), t1 = _mm256_hadd_ps(v2, v3), t2 = _mm256_hadd_ps(v4, v5), t3 = _mm256_hadd_ps(v6, v7);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  /* u0 = [v0 lo, v1 lo, v2 lo, v3 lo | v0 hi, v1 hi, v2 hi, v3 hi], likewise u1 for v4..v7 */
  const __m256 lo = _mm256_permute2f128_ps(u0, u1, 0x20), hi = _mm256_permute2f128_ps(u0, u1, 0x31);
  /* lo = [v0..v3 lo | v4..v7 lo]: lane order 0,1,2,3 | 4,5,6,7 as wanted */
  return _mm256_add_ps(lo, hi);
}

/* one group of 16 (or, with half, 8) dimensions of a bfloat16 row as float32: even dims, odd dims */
INLINE void widen16(const uint16_t *r, int half, __m256 *e, __m256 *o) {
  const __m256i x = half ? _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)r)) : _mm256_loadu_si256((const __m256i *)r);
  *e = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  *o = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000)));
}

/* the order a query or output vector is kept in: per group of 16 dims, the 8 even dims then the 8 odd ones (a half group: 4 and 4, zero-padded) */
static void to_groups(float *dst, const float *src, long hd) {
  for (long g = 0; g * 16 < hd; g++) {
    const long n = hd - g * 16 >= 16 ? 8 : 4;
    for (long i = 0; i < 8; i++) {
      dst[g * 16 + i] = i < n ? src[g * 16 + 2 * i] : 0;
      dst[g * 16 + 8 + i] = i < n ? src[g * 16 + 2 * i + 1] : 0;
    }
  }
}

static void from_groups(float *dst, const float *src, long hd, float scale) {
  const __m256 k = _mm256_set1_ps(scale);
  for (long g = 0; g * 16 < hd; g++) {
    const __m256 e = _mm256_mul_ps(_mm256_loadu_ps(src + g * 16), k), o = _mm256_mul_ps(_mm256_loadu_ps(src + g * 16 + 8), k);
    const __m256 lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
    _mm256_storeu_ps(dst + g * 16, _mm256_permute2f128_ps(lo, hi, 0x20));
    if (hd - g * 16 >= 16) _mm256_storeu_ps(dst + g * 16 + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
}

/*
 * Scores of QB queries (grouped order, stride ldq floats) × KB keys (bfloat16 rows, stride ldk),
 * QB·KB = 8: s[i·ld + j] = q_i · k_j, each an 8-lane chain (even dims then odd dims per group) summed by hsum8x8.
 */
#define DOTS(QB, KB)                                                                                             \
  INLINE void dots##QB##x##KB(const float *q, long ldq, const uint16_t *k, long ldk, long hd, float *s, long ld) { \
    __m256 a[8];                                                                                                 \
    for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();                                                      \
    for (long g = 0; g * 16 < hd; g++) {                                                                         \
      const int half = hd - g * 16 < 16;                                                                         \
      __m256 ke[KB], ko[KB];                                                                                     \
      for (int j = 0; j < KB; j++) widen16(k + j * ldk + g * 16, half, &ke[j], &ko[j]);                        \
      for (int i = 0; i < QB; i++) {                                                                             \
        const __m256 qe = _mm256_loadu_ps(q + i * ldq + g * 16), qo = _mm256_loadu_ps(q + i * ldq + g * 16 + 8);  \
        for (int j = 0; j < KB; j++) a[i * KB + j] = _mm256_fmadd_ps(qo, ko[j], _mm256_fmadd_ps(qe, ke[j], a[i * KB + j])); \
      }                                                                                                          \
    }                                                                                                            \
    float t[8];                                                                                                  \
    _mm256_storeu_ps(t, hsum8x8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));                               \
    for (int i = 0; i < QB; i++)                                                                                 \
      for (int j = 0; j < KB; j++) s[i * ld + j] = t[i * KB + j];                                                \
  }
DOTS(4, 2)
DOTS(2, 4)

/*
 * o_i = o_i·alpha_i + Σ_j p_i[j]·v_j for QB queries (grouped order, stride hd floats), j in [0, nk)
 * in order, over groups [g0, g0 + NG): each output lane is one chain whatever QB and NG are.
 */
#define PV(QB, NG)                                                                                               \
  INLINE void pv##QB##x##NG(float *o, long hd, const float *p, long ldp, const float *alpha, const uint16_t *v, long ldv, long nk, long g0) { \
    __m256 a[QB][2 * NG];                                                                                        \
    for (int i = 0; i < QB; i++)                                                                                 \
      for (int c = 0; c < 2 * NG; c++) a[i][c] = _mm256_mul_ps(_mm256_loadu_ps(o + i * hd + g0 * 16 + c * 8), _mm256_set1_ps(alpha[i])); \
    for (long j = 0; j < nk; j++) {                                                                              \
      __m256 x[2 * NG];                                                                                          \
      for (int g = 0; g < NG; g++) widen16(v + j * ldv + (g0 + g) * 16, hd - (g0 + g) * 16 < 16, &x[2 * g], &x[2 * g + 1]); \
      for (int i = 0; i < QB; i++) {                                                                             \
        const __m256 w = _mm256_broadcast_ss(p + i * ldp + j);                                                   \
        for (int c = 0; c < 2 * NG; c++) a[i][c] = _mm256_fmadd_ps(w, x[c], a[i][c]);                           \
      }                                                                                                          \
    }                                                                                                            \
    for (int i = 0; i < QB; i++)                                                                                 \
      for (int c = 0; c < 2 * NG; c++) _mm256_storeu_ps(o + i * hd + g0 * 16 + c * 8, a[i][c]);                 \
  }
PV(4, 1)
PV(2, 2)
PV(2, 1)

/* the most query vectors of one unit (tile rows × heads per key/value head) */
#define MAX_Q 32

/*
 * Units [u0, u1) of one attention call. `tiles` holds per tile: first row, row count, position of
 * the first row, index into `pages` of its cache's first page address. Unit u is key/value head
 * u / nTiles of tile u % nTiles. Query row r of head h is at q + r·ldq + h·hd; its output at
 * out + r·nHeads·hd + h·hd. hd is a multiple of 8 (at most 256), P a multiple of 8.
 */
void attention_paged_bf16(const float *q, long ldq, float *out, const int32_t *tiles, const double *pages, long u0, long u1,
                          long nTiles, long nHeads, long nKv, long hd, long layer, long P, long window, float scale) {
  const long G = nHeads / nKv, HD = (hd + 15) & ~15L, groups = HD / 16;
  float qs[MAX_Q * HD], o[MAX_Q * HD], s[MAX_Q * P];
  float m[MAX_Q], l[MAX_Q], alpha[MAX_Q];
  for (long u = u0; u < u1; u++) {
    const long kvh = u / nTiles, tile = u % nTiles;
    const int32_t *t = tiles + 4 * tile;
    const long row0 = t[0], rows = t[1], pos0 = t[2];
    const double *pt = pages + t[3];
    /* query i = (row i / G, head kvh·G + i % G), padded to an even count with repeats of the first */
    const long nq = rows * G, NQ = (nq + 1) & ~1L;
    for (long i = 0; i < NQ; i++) {
      const long ii = i < nq ? i : 0;
      to_groups(qs + i * HD, q + (row0 + ii / G) * ldq + (kvh * G + ii % G) * hd, hd);
      m[i] = -INFINITY; l[i] = 0;
    }
    memset(o, 0, NQ * HD * sizeof(float));
    const long last = pos0 + rows - 1;
    const long first = window > 0 ? (pos0 - window + 1 > 0 ? pos0 - window + 1 : 0) : 0;
    for (long b = first / P; b <= last / P; b++) {
      const long j0 = b * P, nk = last + 1 - j0 < P ? last + 1 - j0 : P, nk4 = (nk + 3) & ~3L, nk8 = (nk + 7) & ~7L;
      const uint16_t *page = (const uint16_t *)(uintptr_t)pt[b];
      const uint16_t *kb = page + ((layer * nKv + kvh) * 2) * P * hd, *vb = kb + P * hd;
      /* scores of keys [0, nk4) (those past nk are masked below; they are rows of the same page) */
      long i = 0;
      for (; i + 4 <= NQ; i += 4)
        for (long j = 0; j < nk4; j += 2) dots4x2(qs + i * HD, HD, kb + j * hd, hd, hd, s + i * P + j, P);
      if (i < NQ)
        for (long j = 0; j < nk4; j += 4) dots2x4(qs + i * HD, HD, kb + j * hd, hd, hd, s + i * P + j, P);
      /* softmax bookkeeping per query: what it sees of this block is [lo, hi] (empty: untouched) */
      for (long i = 0; i < NQ; i++) {
        const long pos = pos0 + (i < nq ? i : 0) / G;
        const long start = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
        const int lo = (int)((start > j0 ? start : j0) - j0), hi = (int)((pos < j0 + nk - 1 ? pos : j0 + nk - 1) - j0);
        float *si = s + i * P;
        if (hi < lo) {
          alpha[i] = 1;
          memset(si, 0, nk8 * sizeof(float));
          continue;
        }
        alpha[i] = softmax_block(si, nk8, lo, hi, scale, &m[i], &l[i]);
      }
      i = 0;
      for (; i + 4 <= NQ; i += 4)
        for (long g = 0; g < groups; g++) pv4x1(o + i * HD, HD, s + i * P, P, alpha + i, vb, hd, nk, g);
      if (i < NQ) {
        long g = 0;
        for (; g + 2 <= groups; g += 2) pv2x2(o + i * HD, HD, s + i * P, P, alpha + i, vb, hd, nk, g);
        if (g < groups) pv2x1(o + i * HD, HD, s + i * P, P, alpha + i, vb, hd, nk, g);
      }
    }
    for (long i = 0; i < nq; i++) from_groups(out + (row0 + i / G) * nHeads * hd + (kvh * G + i % G) * hd, o + i * HD, hd, 1.0f / l[i]);
  }
}
