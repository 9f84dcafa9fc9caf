/*
 * Small AVX2 + FMA helpers shared by the attention kernels (attention-avx2.c over paged bfloat16
 * caches, attention-f32-avx2.c over float32 blocks): a horizontal max and sum in a fixed order,
 * and e^x on eight lanes. Both kernels depend on these giving the same bits everywhere.
 */
#ifndef OPENCLAW_RL_AVX2_MATH_H
#define OPENCLAW_RL_AVX2_MATH_H
#include <immintrin.h>
#include <math.h>

#define INLINE static inline __attribute__((always_inline))

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

/* lanes j..j+7 of [lo, hi] as an all-ones mask */
INLINE __m256 seen8(long j, int lo, int hi) {
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), idx), _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(hi)));
  return _mm256_castsi256_ps(_mm256_andnot_si256(out, _mm256_set1_epi32(-1)));
}

/*
 * One block of a query's running softmax: the block's raw scores s[0, n8) (n8 a multiple of 8) are
 * scaled, those of keys outside [lo, hi] (lo ≤ hi) set to −∞, and replaced by e^(x − m') with m' the new
 * running maximum (exactly 0 where masked); *m and *l (the running sum) are updated and the factor
 * e^(m − m') by which earlier sums and outputs shrink is returned (0 at the query's first block).
 */
INLINE float softmax_block(float *s, long n8, int lo, int hi, float scale, float *m, float *l) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY), vscale = _mm256_set1_ps(scale);
  __m256 vmax = ninf;
  for (long j = 0; j < n8; j += 8) {
    const __m256 x = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(s + j), vscale), seen8(j, lo, hi));
    _mm256_storeu_ps(s + j, x);
    vmax = _mm256_max_ps(vmax, x);
  }
  const float mnew = fmaxf(*m, hmax8(vmax));
  const float alpha = *m == -INFINITY ? 0.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(*m - mnew)));
  const __m256 vm = _mm256_set1_ps(mnew);
  __m256 sum = _mm256_setzero_ps();
  for (long j = 0; j < n8; j += 8) {
    const __m256 x = _mm256_loadu_ps(s + j);
    const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(x, vm)), _mm256_cmp_ps(x, ninf, _CMP_NEQ_OQ));
    _mm256_storeu_ps(s + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  *l = *l * alpha + hsum8(sum);
  *m = mnew;
  return alpha;
}

#endif
