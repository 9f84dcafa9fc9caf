/*
 * The native kernel addon (Node-API, C): the matrix multiplies of the embedded engine (float32, and
 * the packed products also with bfloat16 or int8 weights widened to float32) on
 * AVX-512 or AVX2, chosen at load time from what the CPU reports (OPENCLAW_RL_NATIVE_ISA=avx2
 * forces the narrower path). It holds no state and starts no threads: the engine's own worker pool
 * (src/engine/embedded/kernels/wasm-pool.ts) calls these functions from each of its threads on
 * disjoint parts of a job, with operands addressed inside the WebAssembly memory the whole engine
 * shares. Built by scripts/build-native.mjs; without it the engine runs its WebAssembly kernels.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void gemm_fn(const float *a, const void *b, float *c, long M, long i0, long i1, long K, long N, long lda, long ldc,
                     int acc);
typedef void gemm3_fn(const float *a, const float *b, float *c, long M, long n0, long n1, long K, long lda, long ldb,
                      long ldc, int acc);

#define DECLARE(prefix)                                                                                              \
  gemm_fn prefix##gemm_packed, prefix##gemm_packed_t, prefix##gemm_packed_bf16, prefix##gemm_packed_t_bf16,         \
      prefix##gemm_packed_i8, prefix##gemm_packed_t_i8;                                                            \
  gemm3_fn prefix##gemm_nt, prefix##gemm_nn, prefix##gemm_tn;
DECLARE(avx2_)
DECLARE(avx512_)
/* attention-avx2.c (one AVX2 build for every machine) */
void attention_paged_bf16(const float *q, long ldq, float *out, const int32_t *tiles, const double *pages, long u0, long u1,
                          long nTiles, long nHeads, long nKv, long hd, long layer, long P, long window, float scale);
/* attention-f32-avx2.c (float32 key/value blocks: training, and serving with float32 caches) */
void attention_f32(const char *base, const float *q, long ldq, float *out, const int32_t *tiles, long u0, long u1, long nTiles,
                   long nHeads, long nKv, long hd, long window, float scale);
int attention_backward_f32(const char *base, float *dq, long lddq, const float *dout, const float *out, const float *q, long ldq,
                           const int32_t *table, const int32_t *segs, long p0, long p1, long nHeads, long nKv, long hd, long window,
                           float scale);

static struct {
  const char *name;
  gemm_fn *packed, *packed_t, *packed_bf16, *packed_t_bf16, *packed_i8, *packed_t_i8;
  gemm3_fn *nt, *nn, *tn;
} isa;

static void choose_isa(void) {
  __builtin_cpu_init();
  const char *force = getenv("OPENCLAW_RL_NATIVE_ISA");
  const int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                     __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512 && !(force && strcmp(force, "avx2") == 0)) {
    isa.name = "avx512";
    isa.packed = avx512_gemm_packed; isa.packed_t = avx512_gemm_packed_t;
    isa.packed_bf16 = avx512_gemm_packed_bf16; isa.packed_t_bf16 = avx512_gemm_packed_t_bf16;
    isa.packed_i8 = avx512_gemm_packed_i8; isa.packed_t_i8 = avx512_gemm_packed_t_i8;
    isa.nt = avx512_gemm_nt; isa.nn = avx512_gemm_nn; isa.tn = avx512_gemm_tn;
  } else if (avx2) {
    isa.name = "avx2";
    isa.packed = avx2_gemm_packed; isa.packed_t = avx2_gemm_packed_t;
    isa.packed_bf16 = avx2_gemm_packed_bf16; isa.packed_t_bf16 = avx2_gemm_packed_t_bf16;
    isa.packed_i8 = avx2_gemm_packed_i8; isa.packed_t_i8 = avx2_gemm_packed_t_i8;
    isa.nt = avx2_gemm_nt; isa.nn = avx2_gemm_nn; isa.tn = avx2_gemm_tn;
  } else {
    isa.name = "";
  }
}

#define CHECK(call)                                                                                                  \
  do {                                                                                                               \
    if ((call) != napi_ok) { napi_throw_error(env, NULL, "native kernels: bad arguments"); return NULL; }           \
  } while (0)

/* isa(): "avx512", "avx2", or "" when this CPU has neither (the engine then uses WebAssembly) */
static napi_value js_isa(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  CHECK(napi_create_string_utf8(env, isa.name, NAPI_AUTO_LENGTH, &out));
  return out;
}

/* address(view): the address of a typed array's first byte, as a number (exact below 2^53) */
static napi_value js_address(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  napi_typedarray_type type;
  size_t length;
  void *data;
  napi_value buffer;
  size_t offset;
  CHECK(napi_get_typedarray_info(env, argv[0], &type, &length, &data, &buffer, &offset));
  CHECK(napi_create_double(env, (double)(uintptr_t)data, &out));
  return out;
}

/* (a, b, c: addresses; then 7 integers and the accumulate flag) — the argument order of each gemm */
static int read_args(napi_env env, napi_callback_info info, const float **a, const float **b, float **c, long *n) {
  size_t argc = 11;
  napi_value argv[11];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 11) return 0;
  double p[3];
  for (int i = 0; i < 3; i++)
    if (napi_get_value_double(env, argv[i], &p[i]) != napi_ok) return 0;
  for (int i = 0; i < 8; i++) {
    int64_t v;
    if (napi_get_value_int64(env, argv[3 + i], &v) != napi_ok) return 0;
    n[i] = (long)v;
  }
  *a = (const float *)(uintptr_t)p[0];
  *b = (const float *)(uintptr_t)p[1];
  *c = (float *)(uintptr_t)p[2];
  return 1;
}

#define GEMM_ENTRY(name, field)                                                                                      \
  static napi_value js_##name(napi_env env, napi_callback_info info) {                                               \
    const float *a, *b;                                                                                              \
    float *c;                                                                                                        \
    long n[8];                                                                                                       \
    if (!read_args(env, info, &a, &b, &c, n)) {                                                                      \
      napi_throw_error(env, NULL, "native kernels: " #name " takes 3 addresses and 8 integers");                   \
      return NULL;                                                                                                   \
    }                                                                                                                \
    isa.field(a, b, c, n[0], n[1], n[2], n[3], n[4], n[5], n[6], (int)n[7]);                                         \
    return NULL;                                                                                                     \
  }
GEMM_ENTRY(gemm_packed, packed)
GEMM_ENTRY(gemm_packed_t, packed_t)
GEMM_ENTRY(gemm_packed_bf16, packed_bf16)
GEMM_ENTRY(gemm_packed_t_bf16, packed_t_bf16)
GEMM_ENTRY(gemm_packed_i8, packed_i8)
GEMM_ENTRY(gemm_packed_t_i8, packed_t_i8)
GEMM_ENTRY(gemm_nt, nt)
GEMM_ENTRY(gemm_nn, nn)
GEMM_ENTRY(gemm_tn, tn)

/* reads `na` addresses, then `ni` integers, then a float (the scale) from exactly na + ni + 1 arguments */
static int read_mixed(napi_env env, napi_callback_info info, size_t na, size_t ni, double *addr, int64_t *ints, double *scale) {
  size_t argc = 20;
  napi_value argv[20];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != na + ni + 1) return 0;
  for (size_t i = 0; i < na; i++)
    if (napi_get_value_double(env, argv[i], &addr[i]) != napi_ok) return 0;
  for (size_t i = 0; i < ni; i++)
    if (napi_get_value_int64(env, argv[na + i], &ints[i]) != napi_ok) return 0;
  return napi_get_value_double(env, argv[na + ni], scale) == napi_ok;
}

#define ADDR(x) ((const char *)(uintptr_t)(x))

/* attention_paged_bf16(q, out, tiles, pages: addresses; ldq, u0, u1, nTiles, nHeads, nKv, hd, layer, P, window: integers; scale) */
static napi_value js_attention_paged_bf16(napi_env env, napi_callback_info info) {
  double a[4], scale;
  int64_t n[10];
  if (!read_mixed(env, info, 4, 10, a, n, &scale) || n[6] % 8 != 0 || n[6] <= 0 || n[6] > 256 || n[8] % 8 != 0 || n[8] <= 0 || n[5] <= 0 ||
      n[4] % n[5] != 0 || n[4] / n[5] > 32) {
    napi_throw_error(env, NULL, "native kernels: attention_paged_bf16 takes 4 addresses, 10 integers (head dim and page size multiples of 8, head dim at most 256, at most 32 query heads per key/value head) and a scale");
    return NULL;
  }
  attention_paged_bf16((const float *)ADDR(a[0]), (long)n[0], (float *)ADDR(a[1]), (const int32_t *)ADDR(a[2]), (const double *)ADDR(a[3]),
                       (long)n[1], (long)n[2], (long)n[3], (long)n[4], (long)n[5], (long)n[6], (long)n[7], (long)n[8], (long)n[9], (float)scale);
  return NULL;
}

/* attention_f32(base, q, out, tiles: addresses; ldq, u0, u1, nTiles, nHeads, nKv, hd, window: integers; scale) */
static napi_value js_attention_f32(napi_env env, napi_callback_info info) {
  double a[4], scale;
  int64_t n[8];
  if (!read_mixed(env, info, 4, 8, a, n, &scale) || n[6] % 8 != 0 || n[6] <= 0 || n[6] > 256 || n[5] <= 0 || n[4] % n[5] != 0 ||
      n[4] / n[5] > 48) {
    napi_throw_error(env, NULL, "native kernels: attention_f32 takes 4 addresses, 8 integers (head dim a multiple of 8, at most 256; at most 48 query heads per key/value head) and a scale");
    return NULL;
  }
  attention_f32(ADDR(a[0]), (const float *)ADDR(a[1]), (long)n[0], (float *)ADDR(a[2]), (const int32_t *)ADDR(a[3]), (long)n[1], (long)n[2],
                (long)n[3], (long)n[4], (long)n[5], (long)n[6], (long)n[7], (float)scale);
  return NULL;
}

/* attention_backward_f32(base, dq, dout, out, q, table, segs: addresses; lddq, ldq, p0, p1, nHeads, nKv, hd, window: integers; scale) */
static napi_value js_attention_backward_f32(napi_env env, napi_callback_info info) {
  double a[7], scale;
  int64_t n[8];
  if (!read_mixed(env, info, 7, 8, a, n, &scale) || n[6] % 8 != 0 || n[6] <= 0 || n[6] > 256 || n[5] <= 0 || n[4] % n[5] != 0) {
    napi_throw_error(env, NULL, "native kernels: attention_backward_f32 takes 7 addresses, 8 integers (head dim a multiple of 8, at most 256) and a scale");
    return NULL;
  }
  if (attention_backward_f32(ADDR(a[0]), (float *)ADDR(a[1]), (long)n[0], (const float *)ADDR(a[2]), (const float *)ADDR(a[3]),
                             (const float *)ADDR(a[4]), (long)n[1], (const int32_t *)ADDR(a[5]), (const int32_t *)ADDR(a[6]), (long)n[2],
                             (long)n[3], (long)n[4], (long)n[5], (long)n[6], (long)n[7], (float)scale) != 0)
    napi_throw_error(env, NULL, "native kernels: attention_backward_f32 could not allocate its scratch memory");
  return NULL;
}

NAPI_MODULE_INIT() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, choose_isa);
  napi_property_descriptor props[] = {
      {"isa", NULL, js_isa, NULL, NULL, NULL, napi_default, NULL},
      {"address", NULL, js_address, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_packed", NULL, js_gemm_packed, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_packed_t", NULL, js_gemm_packed_t, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_packed_bf16", NULL, js_gemm_packed_bf16, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_packed_t_bf16", NULL, js_gemm_packed_t_bf16, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_packed_i8", NULL, js_gemm_packed_i8, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_packed_t_i8", NULL, js_gemm_packed_t_i8, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_nt", NULL, js_gemm_nt, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_nn", NULL, js_gemm_nn, NULL, NULL, NULL, napi_default, NULL},
      {"gemm_tn", NULL, js_gemm_tn, NULL, NULL, NULL, napi_default, NULL},
      {"attention_paged_bf16", NULL, js_attention_paged_bf16, NULL, NULL, NULL, napi_default, NULL},
      {"attention_f32", NULL, js_attention_f32, NULL, NULL, NULL, napi_default, NULL},
      {"attention_backward_f32", NULL, js_attention_backward_f32, NULL, NULL, NULL, napi_default, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
