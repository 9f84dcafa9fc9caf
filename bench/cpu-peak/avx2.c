/*
 * Peak arithmetic of this CPU for float32 fused multiply-adds on 256-bit vectors (AVX2 + FMA): a loop
 * of independent accumulator chains, one and two threads. The ceiling the engine's kernels are
 * measured against (docs/benchmarks.md, issue 16).
 *
 *   cc -O3 -mavx2 -mfma bench/cpu-peak/avx2.c -o peak -lpthread && ./peak 1 && ./peak 2
 */
#include <immintrin.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <pthread.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
void* run(void*a){ __m256 acc[12]; for(int i=0;i<12;i++)acc[i]=_mm256_set1_ps(i);
 __m256 x=_mm256_set1_ps(0.999f), y=_mm256_set1_ps(0.001f);
 for(long it=0;it<200000000;it++){ for(int i=0;i<12;i++) acc[i]=_mm256_fmadd_ps(acc[i],x,y);}
 float s=0; for(int i=0;i<12;i++){float t[8];_mm256_storeu_ps(t,acc[i]);s+=t[0];} *(float*)a=s; return 0;}
int main(int c,char**v){int n=atoi(v[1]);pthread_t th[4];float r[4];double t=now();
 for(int i=0;i<n;i++)pthread_create(&th[i],0,run,&r[i]); for(int i=0;i<n;i++)pthread_join(th[i],0);
 double dt=now()-t; printf("%d threads: %.1f GFLOP/s\n",n, n*200000000.0*12*16/dt/1e9);}
