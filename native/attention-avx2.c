/*
 * Causal grouped-query attention over paged bfloat16 KV caches (src/engine/embedded/kv-pages.ts),
 * AVX2 + FMA (also what AVX-512 machines run: one build, so every machine gives the same bits).
 *
 * A page holds `P` positions of every layer: [layer][K, V][P][kvDim] bfloat16. A work unit is one
 * key/value head of one tile: up to `tileRows` consecutive query rows of one sequence (positions
 * pos0, pos0 + 1, …). The unit reads each key/value block (one page, P positions) once, widened to
 * float32, for all the tile's rows and all the query heads that share that key/value head, and
 * keeps a running (online) softmax: a short new suffix over a long cached prefix reads the prefix
 * once per tile instead of once per (row, head).
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

#define INLINE static inline __attribute__((always_inline))

/* lanes l0..l7 of each of v0..v7 summed as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), lane i of the result from vi */
INLINE __m256 hsum8x8(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4, __m256 v5, __m256 v6, __m256 v7) {
  const __m256 t0 = _mm256_hadd_ps(v0, v1), t1 = _mm256_hadd_ps(v2, v3), t2 = _mm256_hadd_ps(v4, v5), t3 = _mm256_hadd_ps(v6, v7);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  /* u0 = [v0 lo, v1 lo, v2 lo, v3 lo | v0 hi, v1 hi, v2 hi, v3 hi], likewise u1 for v4..v7 */
  const __m256 lo = _mm256_permute2f128_ps(u0, u1, 0x20), hi = _mm256_permute2f128_ps(u0, u1, 0x31);
  /* lo = [v0..v3 lo | v4..v7 lo]: lane order 0,1,2,3 | 4,5,6,7 as wanted */
  return _mm256_add_ps(lo, hi);
}

INLINE float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

INLINE float hsum8(__m256 v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* e^x lane by lane: x = n·ln2 + r, e^r by its degree-6 Taylor polynomial (relative error < 2e-7), clamped to float range */
INLINE __m256 exp8(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f)), _mm256_set1_ps(-87.3365478515625f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(-2.12194440e-4f)));
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(pow2n));
}

/* n bfloat16 values (n a multiple of 8) widened to float32 */
INLINE void widen(float *dst, const uint16_t *src, long n) {
  for (long i = 0; i < n; i += 8) {
    const __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
}

/* s[i·ld + j] = q_i · k_j for 4 queries × 2 keys (each an 8-lane FMA chain over d, then the fixed tree) */
INLINE void dots4x2(const float *q, long hd, const float *k0, const float *k1, float *s, long ld) {
  const float *q0 = q, *q1 = q + hd, *q2 = q + 2 * hd, *q3 = q + 3 * hd;
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
  for (long d = 0; d < hd; d += 8) {
    const __m256 x0 = _mm256_loadu_ps(k0 + d), x1 = _mm256_loadu_ps(k1 + d);
    __m256 y = _mm256_loadu_ps(q0 + d);
    a00 = _mm256_fmadd_ps(y, x0, a00); a01 = _mm256_fmadd_ps(y, x1, a01);
    y = _mm256_loadu_ps(q1 + d);
    a10 = _mm256_fmadd_ps(y, x0, a10); a11 = _mm256_fmadd_ps(y, x1, a11);
    y = _mm256_loadu_ps(q2 + d);
    a20 = _mm256_fmadd_ps(y, x0, a20); a21 = _mm256_fmadd_ps(y, x1, a21);
    y = _mm256_loadu_ps(q3 + d);
    a30 = _mm256_fmadd_ps(y, x0, a30); a31 = _mm256_fmadd_ps(y, x1, a31);
  }
  float t[8];
  _mm256_storeu_ps(t, hsum8x8(a00, a01, a10, a11, a20, a21, a30, a31));
  s[0] = t[0]; s[1] = t[1]; s[ld] = t[2]; s[ld + 1] = t[3]; s[2 * ld] = t[4]; s[2 * ld + 1] = t[5]; s[3 * ld] = t[6]; s[3 * ld + 1] = t[7];
}

/* o_i[c .. c+8) = o_i·alpha_i + Σ_j p_i[j]·v_j[c .. c+8) for 4 queries, j in [0, nk) in order */
INLINE void pv4(float *o, long hd, const float *p, long ldp, const float *alpha, const float *v, long nk, long c) {
  __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(o + c), _mm256_set1_ps(alpha[0]));
  __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(o + hd + c), _mm256_set1_ps(alpha[1]));
  __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(o + 2 * hd + c), _mm256_set1_ps(alpha[2]));
  __m256 a3 = _mm256_mul_ps(_mm256_loadu_ps(o + 3 * hd + c), _mm256_set1_ps(alpha[3]));
  for (long j = 0; j < nk; j++) {
    const __m256 x = _mm256_loadu_ps(v + j * hd + c);
    a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), x, a0);
    a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + ldp + j), x, a1);
    a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + 2 * ldp + j), x, a2);
    a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + 3 * ldp + j), x, a3);
  }
  _mm256_storeu_ps(o + c, a0); _mm256_storeu_ps(o + hd + c, a1); _mm256_storeu_ps(o + 2 * hd + c, a2); _mm256_storeu_ps(o + 3 * hd + c, a3);
}

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
  const long G = nHeads / nKv, kvDim = nKv * hd;
  float qs[MAX_Q * hd], o[MAX_Q * hd], kf[P * hd], vf[P * hd], s[MAX_Q * P];
  float m[MAX_Q], l[MAX_Q], alpha[MAX_Q];
  int32_t lo[MAX_Q], hi[MAX_Q];
  for (long u = u0; u < u1; u++) {
    const long kvh = u / nTiles, tile = u % nTiles;
    const int32_t *t = tiles + 4 * tile;
    const long row0 = t[0], rows = t[1], pos0 = t[2];
    const double *pt = pages + t[3];
    const long nq = rows * G, NQ = (nq + 3) & ~3L;
    /* the tile's queries, query i = (row i / G, head kvh·G + i % G); padding repeats the first */
    for (long i = 0; i < NQ; i++) {
      const long ii = i < nq ? i : 0;
      memcpy(qs + i * hd, q + (row0 + ii / G) * ldq + (kvh * G + ii % G) * hd, hd * sizeof(float));
      m[i] = -INFINITY; l[i] = 0;
    }
    memset(o, 0, NQ * hd * sizeof(float));
    const long last = pos0 + rows - 1;
    const long first = window > 0 ? (pos0 - window + 1 > 0 ? pos0 - window + 1 : 0) : 0;
    for (long b = first / P; b <= last / P; b++) {
      const long j0 = b * P, nk = last + 1 - j0 < P ? last + 1 - j0 : P, nk2 = (nk + 1) & ~1L, nk8 = (nk + 7) & ~7L;
      const uint16_t *page = (const uint16_t *)(uintptr_t)pt[b];
      const uint16_t *kb = page + (layer * 2) * P * kvDim + kvh * hd, *vb = page + (layer * 2 + 1) * P * kvDim + kvh * hd;
      for (long j = 0; j < nk; j++) { widen(kf + j * hd, kb + j * kvDim, hd); widen(vf + j * hd, vb + j * kvDim, hd); }
      if (nk2 > nk) memset(kf + nk * hd, 0, hd * sizeof(float));
      for (long i = 0; i < NQ; i += 4)
        for (long j = 0; j < nk2; j += 2) dots4x2(qs + i * hd, hd, kf + j * hd, kf + (j + 1) * hd, s + i * P + j, P);
      /* softmax bookkeeping per query: what it sees of this block is [lo, hi] (empty: untouched) */
      for (long i = 0; i < NQ; i++) {
        const long pos = pos0 + (i < nq ? i : 0) / G;
        const long start = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
        lo[i] = (int32_t)((start > j0 ? start : j0) - j0);
        hi[i] = (int32_t)((pos < j0 + nk - 1 ? pos : j0 + nk - 1) - j0);
        float *si = s + i * P;
        if (hi[i] < lo[i]) {
          alpha[i] = 1;
          memset(si, 0, nk8 * sizeof(float));
          continue;
        }
        const __m256i vlo = _mm256_set1_epi32(lo[i]), vhi = _mm256_set1_epi32(hi[i]);
        const __m256 ninf = _mm256_set1_ps(-INFINITY), vscale = _mm256_set1_ps(scale);
        __m256 vmax = ninf;
        for (long j = 0; j < nk8; j += 8) {
          const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
          const __m256 seen = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_or_si256(_mm256_cmpgt_epi32(vlo, idx), _mm256_cmpgt_epi32(idx, vhi)), _mm256_set1_epi32(-1)));
          const __m256 x = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(si + j), vscale), seen);
          _mm256_storeu_ps(si + j, x);
          vmax = _mm256_max_ps(vmax, x);
        }
        const float mnew = fmaxf(m[i], hmax8(vmax));
        alpha[i] = m[i] == -INFINITY ? 0.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(m[i] - mnew)));
        const __m256 vm = _mm256_set1_ps(mnew);
        __m256 sum = _mm256_setzero_ps();
        for (long j = 0; j < nk8; j += 8) {
          const __m256 x = _mm256_loadu_ps(si + j);
          const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(x, vm)), _mm256_cmp_ps(x, ninf, _CMP_NEQ_OQ));
          _mm256_storeu_ps(si + j, e);
          sum = _mm256_add_ps(sum, e);
        }
        l[i] = l[i] * alpha[i] + hsum8(sum);
        m[i] = mnew;
      }
      for (long i = 0; i < NQ; i += 4)
        for (long c = 0; c < hd; c += 8) pv4(o + i * hd, hd, s + i * P, P, alpha + i, vf, nk, c);
    }
    for (long i = 0; i < nq; i++) {
      const __m256 inv = _mm256_set1_ps(1.0f / l[i]);
      float *dst = out + (row0 + i / G) * nHeads * hd + (kvh * G + i % G) * hd;
      for (long d = 0; d < hd; d += 8) _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_loadu_ps(o + i * hd + d), inv));
    }
  }
}
