/*
 * The paged bfloat16 attention kernel alone (native/attention-avx2.c), one thread: a tile of new
 * query rows over a long cached prefix, as a later OpenClaw turn or a scoring pass reads it.
 * Build it against any checkout's kernel to compare two versions side by side:
 *
 *   cc -O3 -ffp-contract=off -mavx2 -mfma -I REPO/native bench/attention-paged.c REPO/native/attention-avx2.c -o attn -lm
 *   ./attn CTX ROWS [HEADS KV_HEADS HEAD_DIM TILE_QUERIES REPS]   (default: 10000 128 16 8 128 256 7, Qwen3-0.6B's heads)
 *
 * TILE_QUERIES is the most query vectors a work unit takes (MAX_Q of the kernel: 32 before session 11,
 * 256 since; src/engine/embedded/kernels/native.ts cuts tiles to it). Prints the median and the best
 * time of one layer's call over REPS calls, the float rate, and the checksum of the output (equal
 * checksums: the same bits).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void attention_paged_bf16(const float *q, long ldq, float *out, const int32_t *tiles, const double *pages, long u0, long u1,
                          long nTiles, long nHeads, long nKv, long hd, long layer, long P, long window, float scale);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) { const double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
  const long ctx = argc > 1 ? atol(argv[1]) : 10000, rows = argc > 2 ? atol(argv[2]) : 128;
  const long nH = argc > 3 ? atol(argv[3]) : 16, nKv = argc > 4 ? atol(argv[4]) : 8, hd = argc > 5 ? atol(argv[5]) : 128;
  const long maxQ = argc > 6 ? atol(argv[6]) : 256, reps = argc > 7 ? atol(argv[7]) : 7, P = 64;
  const long tileRows = maxQ / (nH / nKv) > 0 ? maxQ / (nH / nKv) : 1;
  /* pages as the engine makes them: each its own allocation, one layer here */
  const long nPages = (ctx + rows + P - 1) / P;
  double *pages = malloc(nPages * sizeof(double));
  uint32_t seed = 1;
  for (long i = 0; i < nPages; i++) {
    uint16_t *pg = aligned_alloc(64, nKv * 2 * P * hd * sizeof(uint16_t));
    for (long j = 0; j < nKv * 2 * P * hd; j++) { seed = seed * 1664525u + 1013904223u; pg[j] = (uint16_t)(0x3c00 + (seed >> 22) - 0x200); }
    pages[i] = (double)(uintptr_t)pg;
  }
  float *q = malloc(rows * nH * hd * sizeof(float)), *out = calloc(rows * nH * hd, sizeof(float));
  for (long i = 0; i < rows * nH * hd; i++) { seed = seed * 1664525u + 1013904223u; q[i] = (float)(seed >> 8) / 16777216.0f - 0.5f; }
  const long nT = (rows + tileRows - 1) / tileRows;
  int32_t *tiles = malloc(nT * 4 * sizeof(int32_t));
  for (long t = 0; t < nT; t++) {
    tiles[4 * t] = (int32_t)(t * tileRows);
    tiles[4 * t + 1] = (int32_t)(rows - t * tileRows < tileRows ? rows - t * tileRows : tileRows);
    tiles[4 * t + 2] = (int32_t)(ctx + t * tileRows);
    tiles[4 * t + 3] = 0;
  }
  double *times = malloc(reps * sizeof(double));
  for (long r = 0; r < reps; r++) {
    const double t0 = now();
    attention_paged_bf16(q, nH * hd, out, tiles, pages, 0, nT * nKv, nT, nH, nKv, hd, 0, P, 0, 0.08838835f);
    times[r] = now() - t0;
  }
  qsort(times, reps, sizeof(double), cmp);
  uint32_t sum = 0;
  for (long i = 0; i < rows * nH * hd; i++) { uint32_t b; memcpy(&b, &out[i], 4); sum = sum * 31 + b; }
  const double flops = 4.0 * rows * nH * hd * (ctx + rows / 2.0);
  printf("ctx %ld rows %ld heads %ld/%ld×%ld tile %ld queries: median %.1f ms, best %.1f ms a layer (%.1f GFLOP/s at the median), checksum %08x\n",
         ctx, rows, nH, nKv, hd, maxQ, times[reps / 2] * 1e3, times[0] * 1e3, flops / times[reps / 2] / 1e9, sum);
  return 0;
}
