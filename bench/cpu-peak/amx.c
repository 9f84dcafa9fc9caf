/*
 * Peak arithmetic of this CPU for bfloat16 tile products (AMX-BF16, four 16×16 float32 accumulator
 * tiles): a loop of independent accumulator chains, one and two threads. The ceiling the engine's
 * kernels are measured against (docs/benchmarks.md, issue 16).
 *
 *   cc -O2 -mamx-tile -mamx-bf16 bench/cpu-peak/amx.c -o amx -lpthread && taskset -c 0,1 ./amx
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { uint8_t palette, start; uint8_t r0[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg_t;
#define IT 20000000L
static void *run(void *a) {
  cfg_t c; memset(&c, 0, sizeof c); c.palette = 1;
  for (int i = 0; i < 8; i++) { c.rows[i] = 16; c.colsb[i] = 64; }
  _tile_loadconfig(&c);
  static uint16_t A[16 * 32] __attribute__((aligned(64))), B[16 * 32] __attribute__((aligned(64)));
  float C[16 * 16] __attribute__((aligned(64))) = {0};
  for (int i = 0; i < 512; i++) { A[i] = 0x3c00; B[i] = 0x3c00; }
  _tile_loadd(4, A, 64); _tile_loadd(5, B, 64); _tile_loadd(6, A, 64); _tile_loadd(7, B, 64);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  for (long it = 0; it < IT; it++) { _tile_dpbf16ps(0, 4, 5); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 6, 5); _tile_dpbf16ps(3, 6, 7); }
  _tile_stored(0, C, 64); _tile_release(); *(float *)a = C[0]; return 0;
}
int main(void) {
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) { perror("arch_prctl (AMX not permitted)"); return 1; }
  for (int n = 1; n <= 2; n++) { pthread_t th[2]; float r[2]; double t = now();
    for (int i = 0; i < n; i++) pthread_create(&th[i], 0, run, &r[i]); for (int i = 0; i < n; i++) pthread_join(th[i], 0);
    double dt = now() - t; printf("AMX tdpbf16ps, %d thread(s): %.0f GFLOP/s\n", n, (double)n * IT * 4 * 16 * 16 * 32 * 2 / dt / 1e9); }
  return 0; }
