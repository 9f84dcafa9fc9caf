/* The AVX-512 build of gemm.h: 32 vector registers (AVX-512VL), so 8 × 24 broadcast tiles and 4 × 6 dot tiles. */
#define PREFIX avx512_
#define ROWS 8
#define BCOLS 3
#define DOT_ROWS 4
#define DOT_COLS 6
#include "gemm.h"
