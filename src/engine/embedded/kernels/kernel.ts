// The matrix-multiply kernel interface. Everything else in the engine is O(n) work in TypeScript;
// the GEMMs are where the time goes, so they sit behind this small interface with two
// implementations that must agree within float32 rounding: WASM SIMD on worker threads (default)
// and plain TypeScript (always available, the reference).

export interface MatmulOptions {
  /** row strides in floats (default: K for A and B, N for C) */
  lda?: number;
  ldb?: number;
  ldc?: number;
  /** add into C instead of overwriting it */
  accumulate?: boolean;
}

export interface MatmulKernel {
  readonly name: string;
  readonly threads: number;
  /** C[M×N] (+)= A[M×K] · B[N×K]ᵀ — B in Hugging Face's [out, in] weight layout. */
  matmulNT(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts?: MatmulOptions): void;
  close(): Promise<void>;
}

export type KernelName = 'wasm' | 'ts';
