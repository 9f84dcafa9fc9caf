/* The AVX2 + FMA build of gemm.h: 16 vector registers, so 6 × 16 broadcast tiles and 3 × 3 dot tiles. */
#define PREFIX avx2_
#define ROWS 6
#define BCOLS 2
#define DOT_ROWS 3
#define DOT_COLS 3
#include "gemm.h"
