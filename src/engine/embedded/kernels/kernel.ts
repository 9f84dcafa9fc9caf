// The compute-kernel interface. The matrix multiplies and attention are where the time goes, so
// they sit behind this small interface with three implementations that must agree within float32
// rounding: native AVX-512/AVX2 matrix multiplies (native.ts; the default where the addon was
// built), WASM SIMD on worker threads (the fallback), and plain TypeScript (always available, the
// reference). Everything else in the engine is O(n) work in TypeScript.
import type { AttentionShape } from '../ops/attention.ts';
import type { PackedMatrix } from './packed.ts';
import type { PagedKvCache } from '../kv-pages.ts';

export interface MatmulOptions {
  /** row strides in floats (default: the row length of each operand as stored) */
  lda?: number;
  ldb?: number;
  ldc?: number;
  /** add into C instead of overwriting it */
  accumulate?: boolean;
}

/** One attention call over a batch of query rows, each against its own sequence's KV cache. */
export interface AttentionBatch {
  /** query rows (row r at r·ldq), heads side by side */
  q: Float32Array;
  ldq: number;
  /** [rows, numHeads·headDim] */
  out: Float32Array;
  rows: number;
  rowK: Float32Array[];
  rowV: Float32Array[];
  /** position of each row; it attends to cache positions ≤ its own */
  rowPos: Int32Array;
}

/** One attention call of layer `layer` whose rows read paged bfloat16 caches (kv-pages.ts); the rows' keys and values are already stored. */
export interface PagedAttentionBatch {
  q: Float32Array;
  ldq: number;
  out: Float32Array;
  rows: number;
  rowCache: PagedKvCache[];
  rowPos: Int32Array;
  layer: number;
}

/** The backward of one attention call over training rows (every position of each sequence is a row). */
export interface AttentionBackwardBatch extends AttentionBatch {
  /** incoming gradient of `out` ([rows, numHeads·headDim]) */
  dOut: Float32Array;
  /** receives ∂/∂q (layout of q: row r at r·lddq) */
  dq: Float32Array;
  lddq: number;
  /** per row: the [positions × kvDim] gradient blocks of its sequence's keys and values (accumulated into) */
  rowDK: Float32Array[];
  rowDV: Float32Array[];
}

export interface Kernel {
  readonly name: string;
  readonly threads: number;
  /** C[M×N] (+)= A[M×K] · B[N×K]ᵀ — B in Hugging Face's [out, in] weight layout. */
  matmulNT(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts?: MatmulOptions): void;
  /** C[M×rows] (+)= A[M×cols] · Wᵀ for a packed frozen weight W [rows = out, cols = in] (the forward product). lda/ldc as usual. */
  matmulPacked(c: Float32Array, a: Float32Array, w: PackedMatrix, M: number, opts?: MatmulOptions): void;
  /** C[M×cols] (+)= A[M×rows] · W for a packed W — the backward pass's dX = dY · W. */
  matmulPackedT(c: Float32Array, a: Float32Array, w: PackedMatrix, M: number, opts?: MatmulOptions): void;
  /** C[M×N] (+)= A[M×K] · B[K×N] — e.g. dX = dY · W with W in its [out, in] layout. */
  matmulNN(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts?: MatmulOptions): void;
  /** C[M×N] (+)= A[K×M]ᵀ · B[K×N] — e.g. a weight gradient dW = dYᵀ · X summed over K rows. lda/ldb are the strides of A's and B's K rows. */
  matmulTN(c: Float32Array, a: Float32Array, b: Float32Array, M: number, N: number, K: number, opts?: MatmulOptions): void;
  /** causal grouped-query attention (see ops/attention.ts for the exact definition) */
  attention(batch: AttentionBatch, shape: AttentionShape): void;
  attentionBackward(batch: AttentionBackwardBatch, shape: AttentionShape): void;
  /** `attention` over paged bfloat16 caches; kernels without it serve with float32 caches in the arena */
  attentionPaged?(batch: PagedAttentionBatch, shape: AttentionShape): void;
  /** the address of a buffer outside the WebAssembly memory, for kernels that read such buffers (native) */
  addressOf?(view: ArrayBufferView): number;
  /** out[r, i] = silu(gu[r, i])·gu[r, I + i] (see ops/swiglu.ts) */
  swiglu(out: Float32Array, gu: Float32Array, rows: number, inter: number): void;
  swigluBackward(dgu: Float32Array, dout: Float32Array, gu: Float32Array, rows: number, inter: number): void;
  /** lse[r] = log Σ_v exp(logits[r, v] / T) for a [rows × V] block */
  rowsLogSumExp(logits: Float32Array, rows: number, V: number, invT: number, lse: Float32Array): void;
  /** logits[r, ·] ← −coef[r]·softmax(logits[r, ·] / T), using lse from rowsLogSumExp */
  rowsSoftmaxGrad(logits: Float32Array, rows: number, V: number, invT: number, lse: Float32Array, coef: Float32Array): void;
  close(): Promise<void>;
}

export type KernelName = 'native' | 'wasm' | 'ts';
