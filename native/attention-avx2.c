/*
 * Causal grouped-query attention over paged bfloat16 KV caches (src/engine/embedded/kv-pages.ts),
 * AVX2 + FMA (also what AVX-512 machines run: one build, so every machine gives the same bits).
 *
 * A page holds `P` positions of every layer: [layer][kv head][K, V][P][hd] bfloat16, so the keys
 * (and the values) of one head of one block are one contiguous run. A work unit is one
 * key/value head of one tile: up to `tileRows` consecutive query rows of one sequence (positions
 * pos0, pos0 + 1, …), with tileRows × (query heads per key/value head) ≤ MAX_Q. The unit widens
 * each key/value block (one page, P positions) to float32 once, for all the tile's rows and all the
 * query heads that share that key/value head, while the next block is prefetched, and keeps a
 * running (online) softmax: a short new suffix over a long cached prefix reads the prefix once per
 * tile instead of once per (row, head). Tiles are long (MAX_Q = 256 queries) because every tile
 * reads the whole prefix again: at 10K cached positions that read, not the arithmetic, was what
 * 32-query tiles waited on.
 *
 * Keys and values are widened 16 at a time: one 32-byte load holds 8 pairs of bfloat16; the pair's
 * low half shifted up is the even dimension's float32, the pair with its low half cleared is the
 * odd one's. Query vectors, the widened blocks and outputs are kept in that even/odd order per
 * group of 16 dimensions (queries are reordered once per tile, outputs once at the end).
 *
 * Exactness: every query's result is the same whatever tile it is in (alone as a decode row, or
 * among the rows of a prefill chunk) and whatever else is in the batch. Each score is one
 * fused-multiply-add chain over the head dimension in 8 lanes, summed in a fixed tree; each output
 * lane one chain over the block's keys in order; blocks are aligned to absolute positions (pages);
 * keys a query must not see get probability exactly 0 and blocks it must not see leave its state
 * untouched (scale 1, nothing added), so a longer tile only adds exact no-ops. Sampling (decode
 * rows) and scoring (prefill rows) therefore agree bit for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
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

/* a key/value block (n rows of one head, bfloat16, stride hd) widened once to float32 rows of HD floats in the grouped order */
static void widen_block(float *dst, const uint16_t *src, long n, long hd, long HD, const uint16_t *next) {
  for (long j = 0; j < n; j++) {
    if (next)
      for (long b = 0; b < hd * 2; b += 64) _mm_prefetch((const char *)(next + j * hd) + b, _MM_HINT_T1);
    for (long g = 0; g * 16 < hd; g++) {
      __m256 e, o;
      widen16(src + j * hd + g * 16, hd - g * 16 < 16, &e, &o);
      _mm256_storeu_ps(dst + j * HD + g * 16, e);
      _mm256_storeu_ps(dst + j * HD + g * 16 + 8, o);
    }
  }
}

/*
 * Scores of QB queries × 2 keys (all float32 in the grouped order, strides HD): s[i·ld + j] = q_i · k_j,
 * each one 8-lane fused-multiply-add chain over the vectors in order (a group's even half, then its
 * odd half), then summed by hsum8x8 — the same chain whatever QB is.
 */
#define DOTS(QB)                                                                                                 \
  INLINE void dots##QB##x2(const float *q, const float *k, long HD, float *s, long ld) {                        \
    enum { QR = (QB + 3) & ~3 }; /* rows past QB stay zero: hsum8x8 takes four queries at a time */             \
    __m256 a[QR][2];                                                                                             \
    for (int i = 0; i < QR; i++) a[i][0] = a[i][1] = _mm256_setzero_ps();                                        \
    for (long c = 0; c < HD; c += 8) {                                                                           \
      const __m256 k0 = _mm256_loadu_ps(k + c), k1 = _mm256_loadu_ps(k + HD + c);                               \
      for (int i = 0; i < QB; i++) {                                                                             \
        __m256 x = _mm256_loadu_ps(q + i * HD + c);                                                              \
        __asm__("" : "+x"(x)); /* one load of q for both keys (the compiler would fold it into each FMA) */     \
        a[i][0] = _mm256_fmadd_ps(x, k0, a[i][0]);                                                               \
        a[i][1] = _mm256_fmadd_ps(x, k1, a[i][1]);                                                               \
      }                                                                                                          \
    }                                                                                                            \
    float t[8];                                                                                                  \
    for (int i0 = 0; i0 < QB; i0 += 4) {                                                                         \
      _mm256_storeu_ps(t, hsum8x8(a[i0][0], a[i0][1], a[i0 + 1][0], a[i0 + 1][1], a[i0 + 2][0], a[i0 + 2][1], a[i0 + 3][0], a[i0 + 3][1])); \
      for (int i = 0; i < 4 && i0 + i < QB; i++) { s[(i0 + i) * ld] = t[2 * i]; s[(i0 + i) * ld + 1] = t[2 * i + 1]; } \
    }                                                                                                            \
  }
DOTS(6)
DOTS(4)
DOTS(2)

/*
 * o_i = o_i·alpha_i + Σ_j p_i[j]·v_j for QB queries over the 16 lanes [c0, c0 + 16) of their
 * outputs (grouped order, stride HD), j in [0, nk) in order: each output lane is one chain whatever QB is.
 */
#define PV(QB)                                                                                                   \
  INLINE void pv##QB(float *o, long HD, const float *p, long ldp, const float *alpha, const float *v, long nk, long c0) { \
    __m256 a[QB][2];                                                                                             \
    for (int i = 0; i < QB; i++) {                                                                               \
      const __m256 al = _mm256_set1_ps(alpha[i]);                                                                \
      a[i][0] = _mm256_mul_ps(_mm256_loadu_ps(o + i * HD + c0), al);                                             \
      a[i][1] = _mm256_mul_ps(_mm256_loadu_ps(o + i * HD + c0 + 8), al);                                         \
    }                                                                                                            \
    for (long j = 0; j < nk; j++) {                                                                              \
      const __m256 x0 = _mm256_loadu_ps(v + j * HD + c0), x1 = _mm256_loadu_ps(v + j * HD + c0 + 8);             \
      for (int i = 0; i < QB; i++) {                                                                             \
        const __m256 w = _mm256_broadcast_ss(p + i * ldp + j);                                                   \
        a[i][0] = _mm256_fmadd_ps(w, x0, a[i][0]);                                                               \
        a[i][1] = _mm256_fmadd_ps(w, x1, a[i][1]);                                                               \
      }                                                                                                          \
    }                                                                                                            \
    for (int i = 0; i < QB; i++) {                                                                               \
      _mm256_storeu_ps(o + i * HD + c0, a[i][0]);                                                                \
      _mm256_storeu_ps(o + i * HD + c0 + 8, a[i][1]);                                                            \
    }                                                                                                            \
  }
PV(6)
PV(4)
PV(2)

/* the most query vectors of one unit (tile rows × heads per key/value head); native.ts cuts tiles to fit */
#define MAX_Q 256

/*
 * Units [u0, u1) of one attention call. `tiles` holds per tile: first row, row count, position of
 * the first row, index into `pages` of its cache's first page address. Unit u is key/value head
 * u / nTiles of tile u % nTiles. Query row r of head h is at q + r·ldq + h·hd; its output at
 * out + r·nHeads·hd + h·hd. hd is a multiple of 8 (at most 256), P a multiple of 8.
 */
void attention_paged_bf16(const float *q, long ldq, float *out, const int32_t *tiles, const double *pages, long u0, long u1,
                          long nTiles, long nHeads, long nKv, long hd, long layer, long P, long window, float scale) {
  const long G = nHeads / nKv, HD = (hd + 15) & ~15L;
  /* ~0.4 MB at head size 128: too much for a helper thread's stack */
  float *const buf = aligned_alloc(64, sizeof(float) * (2 * MAX_Q * HD + MAX_Q * P + 2 * P * HD + 3 * MAX_Q));
  if (!buf) abort(); /* no memory for 0.4 MB: better to stop than to return garbage */
  float *const qs = buf, *const o = qs + MAX_Q * HD, *const s = o + MAX_Q * HD, *const kf = s + MAX_Q * P, *const vf = kf + P * HD;
  float *const m = vf + P * HD, *const l = m + MAX_Q, *const alpha = l + MAX_Q;
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
      /* this block's keys and values as float32, once for all the unit's queries; the next block's are fetched meanwhile */
      const uint16_t *nkb = b < last / P ? (const uint16_t *)(uintptr_t)pt[b + 1] + ((layer * nKv + kvh) * 2) * P * hd : NULL;
      widen_block(kf, kb, nk4, hd, HD, nkb);
      widen_block(vf, vb, nk, hd, HD, nkb ? nkb + P * hd : NULL);
      /* scores of keys [0, nk4) (those past nk are masked below; they are rows of the same page) */
      {
        long i = 0;
        for (; i + 6 <= NQ; i += 6)
          for (long j = 0; j < nk4; j += 2) dots6x2(qs + i * HD, kf + j * HD, HD, s + i * P + j, P);
        if (i + 4 <= NQ) { for (long j = 0; j < nk4; j += 2) dots4x2(qs + i * HD, kf + j * HD, HD, s + i * P + j, P); i += 4; }
        if (i < NQ) for (long j = 0; j < nk4; j += 2) dots2x2(qs + i * HD, kf + j * HD, HD, s + i * P + j, P);
      }
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
      for (long c = 0; c < HD; c += 16) {
        long i = 0;
        for (; i + 6 <= NQ; i += 6) pv6(o + i * HD, HD, s + i * P, P, alpha + i, vf, nk, c);
        if (i + 4 <= NQ) { pv4(o + i * HD, HD, s + i * P, P, alpha + i, vf, nk, c); i += 4; }
        if (i < NQ) pv2(o + i * HD, HD, s + i * P, P, alpha + i, vf, nk, c);
      }
    }
    for (long i = 0; i < nq; i++) from_groups(out + (row0 + i / G) * nHeads * hd + (kvh * G + i % G) * hd, o + i * HD, hd, 1.0f / l[i]);
  }
  free(buf);
}
