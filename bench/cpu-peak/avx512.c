/*
 * Peak arithmetic of this CPU for float32 fused multiply-adds and bfloat16 dot products (vdpbf16ps) on
 * 512-bit vectors: a loop of independent accumulator chains, one and two threads. The ceiling the
 * engine's kernels are measured against (docs/benchmarks.md, issue 16).
 *
 *   cc -O3 -mavx512f -mavx512bf16 -mfma bench/cpu-peak/avx512.c -o peak -lpthread && taskset -c 0,1 ./peak
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define IT 100000000L
static void *f32(void *a){ __m512 acc[12]; for(int i=0;i<12;i++)acc[i]=_mm512_set1_ps(i); __m512 x=_mm512_set1_ps(0.999f),y=_mm512_set1_ps(0.001f);
 for(long it=0;it<IT;it++) for(int i=0;i<12;i++) acc[i]=_mm512_fmadd_ps(acc[i],x,y);
 float s=0; for(int i=0;i<12;i++) s+=_mm512_reduce_add_ps(acc[i]); *(float*)a=s; return 0;}
static void *bf16(void *a){ __m512 acc[12]; for(int i=0;i<12;i++)acc[i]=_mm512_set1_ps(i);
 __m512bh x=(__m512bh)_mm512_set1_epi16(0x3f80), y=(__m512bh)_mm512_set1_epi16(0x3c00);
 for(long it=0;it<IT;it++) for(int i=0;i<12;i++) acc[i]=_mm512_dpbf16_ps(acc[i],x,y);
 float s=0; for(int i=0;i<12;i++) s+=_mm512_reduce_add_ps(acc[i]); *(float*)a=s; return 0;}
int main(void){
  for(int k=0;k<2;k++) for(int n=1;n<=2;n++){ pthread_t th[2]; float r[2]; double t=now();
    for(int i=0;i<n;i++) pthread_create(&th[i],0,k?bf16:f32,&r[i]); for(int i=0;i<n;i++) pthread_join(th[i],0);
    double dt=now()-t; double flop=(double)n*IT*12*(k?64:32);
    printf("%s zmm, %d thread(s): %.1f GFLOP/s\n", k?"vdpbf16ps":"vfmadd231ps", n, flop/dt/1e9); }
  return 0; }
