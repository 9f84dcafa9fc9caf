// Work sharing between the engine thread and its helper threads, one job at a time.
// The engine thread publishes a job (an op and its parameters) in a shared control block and works
// on it too; every thread claims chunks with a compare-and-swap on a word that also carries the
// job's tag, so a helper that wakes late can never claim a chunk of a job it did not read.

export const GEN = 0, CLAIM = 1, DONE = 2, NCHUNKS = 3, CHUNK = 4, TOTAL = 5, OP = 6, STOP = 7, P = 8;
export const CTRL_INTS = P + 16;
/** claim word: (tag << 16) | next chunk index; the sentinel index closes a finished job */
export const CLOSED = 0xffff;
export const MAX_CHUNKS = 4096;
export const OP_GEMM = 0, OP_ATTENTION = 1, OP_NN = 2, OP_TN = 3, OP_ATTENTION_BACKWARD = 4, OP_ROWS_LSE = 5, OP_ROWS_SOFTMAX_GRAD = 6, OP_PACKED = 7, OP_PACKED_T = 8;

export interface WasmKernelExports {
  gemm_nt(a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number): void;
  gemm_nn(a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number): void;
  gemm_tn(a: number, b: number, c: number, i0: number, i1: number, N: number, M: number, lda: number, ldb: number, ldc: number, acc: number): void;
  attention_backward(dq: number, lddq: number, dout: number, out: number, q: number, ldq: number, table: number, segs: number, p0: number, p1: number, nHeads: number, nKv: number, hd: number, window: number, scale: number, scratch: number): void;
  gemm_packed(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  swiglu(out: number, gu: number, r0: number, r1: number, I: number): void;
  swiglu_backward(dgu: number, dout: number, gu: number, r0: number, r1: number, I: number): void;
  rows_lse(logits: number, r0: number, r1: number, V: number, invT: number, lse: number): void;
  rows_softmax_grad(logits: number, r0: number, r1: number, V: number, invT: number, lse: number, coef: number): void;
  attention(qkv: number, ldq: number, out: number, table: number, p0: number, p1: number, nHeads: number, nKv: number, hd: number, window: number, scale: number, scratch: number): void;
}

const f32 = new Float32Array(1), i32 = new Int32Array(f32.buffer);
export function floatBits(x: number): number { f32[0] = x; return i32[0]; }
function bitsFloat(x: number): number { i32[0] = x; return f32[0]; }

/** Run chunks [i0, i1) of the job described by the control block. */
export function exec(ctrl: Int32Array, k: WasmKernelExports, i0: number, i1: number, thread: number): void {
  const p = (i: number) => ctrl[P + i];
  const op = ctrl[OP];
  if (op === OP_GEMM) {
    k.gemm_nt(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_NN) {
    k.gemm_nn(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_TN) {
    k.gemm_tn(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, i0, i1, p(3), p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED) {
    k.gemm_packed(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED_T) {
    k.gemm_packed_t(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_ROWS_LSE) {
    k.rows_lse(p(0) >>> 0, i0, i1, p(1), bitsFloat(p(2)), p(3) >>> 0);
  } else if (op === OP_ROWS_SOFTMAX_GRAD) {
    k.rows_softmax_grad(p(0) >>> 0, i0, i1, p(1), bitsFloat(p(2)), p(3) >>> 0, p(4) >>> 0);
  } else if (op === OP_ATTENTION_BACKWARD) {
    k.attention_backward(p(0) >>> 0, p(1), p(2) >>> 0, p(3) >>> 0, p(4) >>> 0, p(5), p(6) >>> 0, p(7) >>> 0, i0, i1, p(8), p(9), p(10), p(11), bitsFloat(p(12)), (p(13) >>> 0) + thread * p(14));
  } else {
    k.attention(p(0) >>> 0, p(1), p(2) >>> 0, p(3) >>> 0, i0, i1, p(4), p(5), p(6), p(7), bitsFloat(p(8)), (p(9) >>> 0) + thread * p(10));
  }
}

/** Claim and compute chunks of job `tag` until none are left. */
export function runChunks(ctrl: Int32Array, k: WasmKernelExports, tag: number, thread: number): void {
  const nChunks = ctrl[NCHUNKS], chunk = ctrl[CHUNK], total = ctrl[TOTAL];
  for (;;) {
    const v = Atomics.load(ctrl, CLAIM);
    if (v >>> 16 !== tag) return;
    const idx = v & 0xffff;
    if (idx >= nChunks) return;
    if (Atomics.compareExchange(ctrl, CLAIM, v, v + 1) !== v) continue;
    const i0 = idx * chunk;
    exec(ctrl, k, i0, Math.min(total, i0 + chunk), thread);
    Atomics.add(ctrl, DONE, 1);
  }
}
