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
/** the packed products with bfloat16 panels */
export const OP_PACKED_BF16 = 9, OP_PACKED_T_BF16 = 10;
/** the same products on the native addon (native.ts); the parameters of their WebAssembly twins, then the absolute address of b (two halves; 0, 0: b is in the memory) */
export const OP_NATIVE_NT = 11, OP_NATIVE_NN = 12, OP_NATIVE_TN = 13, OP_NATIVE_PACKED = 14, OP_NATIVE_PACKED_T = 15, OP_NATIVE_PACKED_BF16 = 16, OP_NATIVE_PACKED_T_BF16 = 17;
/** the packed products with int8 panels (packed.ts), native and WebAssembly */
export const OP_NATIVE_PACKED_I8 = 18, OP_NATIVE_PACKED_T_I8 = 19, OP_PACKED_I8 = 20, OP_PACKED_T_I8 = 21;
/** attention over paged bfloat16 KV caches on the native addon (native.ts attentionPaged; its own parameters, see exec); a number well apart from the products' */
export const OP_NATIVE_ATTENTION_PAGED = 32;
/** attention over float32 key/value blocks on the native addon, forward and backward (native.ts attention, attentionBackward) */
export const OP_NATIVE_ATTENTION_F32 = 33, OP_NATIVE_ATTENTION_BACKWARD_F32 = 34;

function isNativeOp(op: number): boolean { return op >= OP_NATIVE_NT && op <= OP_NATIVE_PACKED_T_I8; }

/** Chunks of a job are whole multiples of its kernel's tile (rows, columns or panels). */
export function opTile(op: number): number {
  switch (op) {
    case OP_NN: return 16;
    // attention backward: a unit is a whole (sequence, key/value head), and a batch has few of them
    case OP_ATTENTION: case OP_ATTENTION_BACKWARD: case OP_PACKED: case OP_PACKED_BF16: case OP_PACKED_I8: case OP_NATIVE_ATTENTION_PAGED:
    case OP_NATIVE_ATTENTION_F32: case OP_NATIVE_ATTENTION_BACKWARD_F32: return 1;
    case OP_NATIVE_PACKED: case OP_NATIVE_PACKED_BF16: case OP_NATIVE_PACKED_I8: return 6;
    case OP_NATIVE_NN: return 24;
    case OP_NATIVE_TN: return 32;
    case OP_NATIVE_NT: return 12;
    // dX runs gemm_nn's broadcast tiles on its column range: whole vectors of 8 in tiles of 16 (AVX2) or 24 (AVX-512)
    case OP_NATIVE_PACKED_T: case OP_NATIVE_PACKED_T_BF16: case OP_NATIVE_PACKED_T_I8: return 48;
    default: return 4;
  }
}

/** The native addon as one thread calls it: operands are byte offsets into the memory at `base`. */
export interface NativeBinding {
  addon: {
    gemm_packed(a: number, p: number, c: number, ...n: number[]): void; gemm_packed_t(a: number, p: number, c: number, ...n: number[]): void;
    gemm_nt(a: number, b: number, c: number, ...n: number[]): void; gemm_nn(a: number, b: number, c: number, ...n: number[]): void;
    gemm_tn(a: number, b: number, c: number, ...n: number[]): void;
    gemm_packed_bf16(a: number, p: number, c: number, ...n: number[]): void; gemm_packed_t_bf16(a: number, p: number, c: number, ...n: number[]): void;
    gemm_packed_i8(a: number, p: number, c: number, ...n: number[]): void; gemm_packed_t_i8(a: number, p: number, c: number, ...n: number[]): void;
    attention_paged_bf16(q: number, out: number, tiles: number, pages: number, ...n: number[]): void;
    attention_f32(base: number, q: number, out: number, tiles: number, ...n: number[]): void;
    attention_backward_f32(base: number, dq: number, dout: number, out: number, q: number, table: number, segs: number, ...n: number[]): void;
  };
  /** address of the shared memory's byte 0 (a shared WebAssembly memory never moves when it grows) */
  base: number;
}

export interface WasmKernelExports {
  gemm_nt(a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number): void;
  gemm_nn(a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number): void;
  gemm_tn(a: number, b: number, c: number, i0: number, i1: number, N: number, M: number, lda: number, ldb: number, ldc: number, acc: number): void;
  attention_backward(dq: number, lddq: number, dout: number, out: number, q: number, ldq: number, table: number, segs: number, p0: number, p1: number, nHeads: number, nKv: number, hd: number, window: number, scale: number, scratch: number): void;
  gemm_packed(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_bf16(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t_bf16(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_i8(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t_i8(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  swiglu(out: number, gu: number, r0: number, r1: number, I: number): void;
  swiglu_backward(dgu: number, dout: number, gu: number, r0: number, r1: number, I: number): void;
  rows_lse(logits: number, r0: number, r1: number, V: number, invT: number, lse: number): void;
  rows_softmax_grad(logits: number, r0: number, r1: number, V: number, invT: number, lse: number, coef: number): void;
  attention(qkv: number, ldq: number, out: number, table: number, p0: number, p1: number, nHeads: number, nKv: number, hd: number, window: number, scale: number, scratch: number): void;
}

/** Load the addon at `path` on this thread and bind it to `memory`. */
export function bindNative(require: (p: string) => unknown, path: string, memory: WebAssembly.Memory): NativeBinding {
  const addon = require(path) as NativeBinding['addon'] & { address(v: ArrayBufferView): number };
  return { addon, base: addon.address(new Uint8Array(memory.buffer, 0, 1)) };
}

const f32 = new Float32Array(1), i32 = new Int32Array(f32.buffer);
export function floatBits(x: number): number { f32[0] = x; return i32[0]; }
function bitsFloat(x: number): number { i32[0] = x; return f32[0]; }

/** Run chunks [i0, i1) of the job described by the control block. */
export function exec(ctrl: Int32Array, k: WasmKernelExports, i0: number, i1: number, thread: number, nat: NativeBinding | null = null): void {
  const p = (i: number) => ctrl[P + i];
  const op = ctrl[OP];
  if (op === OP_NATIVE_ATTENTION_PAGED) {
    if (!nat) throw new Error('a native kernel job reached a thread without the native addon');
    // q, ldq, out, tiles, pages (offsets in the memory; the pages table holds the pages' absolute addresses), nTiles, nHeads, nKv, hd, layer, page positions, window, scale
    const b = nat.base;
    nat.addon.attention_paged_bf16(b + (p(0) >>> 0), b + (p(2) >>> 0), b + (p(3) >>> 0), b + (p(4) >>> 0), p(1), i0, i1, p(5), p(6), p(7), p(8), p(9), p(10), p(11), bitsFloat(p(12)));
  } else if (op === OP_NATIVE_ATTENTION_F32) {
    if (!nat) throw new Error('a native kernel job reached a thread without the native addon');
    // q, ldq, out, tiles (offsets in the memory; the tiles hold the caches' offsets too), nTiles, nHeads, nKv, hd, window, scale
    const b = nat.base;
    nat.addon.attention_f32(b, b + (p(0) >>> 0), b + (p(2) >>> 0), b + (p(3) >>> 0), p(1), i0, i1, p(4), p(5), p(6), p(7), p(8), bitsFloat(p(9)));
  } else if (op === OP_NATIVE_ATTENTION_BACKWARD_F32) {
    if (!nat) throw new Error('a native kernel job reached a thread without the native addon');
    // dq, lddq, dout, out, q, ldq, table, segs (offsets in the memory), nHeads, nKv, hd, window, scale
    const b = nat.base;
    nat.addon.attention_backward_f32(b, b + (p(0) >>> 0), b + (p(2) >>> 0), b + (p(3) >>> 0), b + (p(4) >>> 0), b + (p(6) >>> 0), b + (p(7) >>> 0),
      p(1), p(5), i0, i1, p(8), p(9), p(10), p(11), bitsFloat(p(12)));
  } else if (isNativeOp(op)) {
    if (!nat) throw new Error('a native kernel job reached a thread without the native addon');
    // b may live outside the memory (weights placed outside it): then p(9), p(10) hold its absolute address
    const outside = p(9) !== 0 || p(10) !== 0;
    const a = nat.base + (p(0) >>> 0), b = outside ? p(10) * 2 ** 32 + (p(9) >>> 0) : nat.base + (p(1) >>> 0), c = nat.base + (p(2) >>> 0), n = nat.addon;
    if (op === OP_NATIVE_PACKED) n.gemm_packed(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_PACKED_T) n.gemm_packed_t(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_PACKED_BF16) n.gemm_packed_bf16(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_PACKED_T_BF16) n.gemm_packed_t_bf16(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_PACKED_I8) n.gemm_packed_i8(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_PACKED_T_I8) n.gemm_packed_t_i8(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_NT) n.gemm_nt(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else if (op === OP_NATIVE_NN) n.gemm_nn(a, b, c, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
    else n.gemm_tn(a, b, c, i0, i1, p(3), p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_GEMM) {
    k.gemm_nt(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_NN) {
    k.gemm_nn(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_TN) {
    k.gemm_tn(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, i0, i1, p(3), p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED) {
    k.gemm_packed(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED_T) {
    k.gemm_packed_t(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED_BF16) {
    k.gemm_packed_bf16(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED_T_BF16) {
    k.gemm_packed_t_bf16(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED_I8) {
    k.gemm_packed_i8(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
  } else if (op === OP_PACKED_T_I8) {
    k.gemm_packed_t_i8(p(0) >>> 0, p(1) >>> 0, p(2) >>> 0, p(3), i0, i1, p(4), p(5), p(6), p(7), p(8));
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
export function runChunks(ctrl: Int32Array, k: WasmKernelExports, tag: number, thread: number, nat: NativeBinding | null = null): void {
  const nChunks = ctrl[NCHUNKS], chunk = ctrl[CHUNK], total = ctrl[TOTAL];
  for (;;) {
    const v = Atomics.load(ctrl, CLAIM);
    if (v >>> 16 !== tag) return;
    const idx = v & 0xffff;
    if (idx >= nChunks) return;
    if (Atomics.compareExchange(ctrl, CLAIM, v, v + 1) !== v) continue;
    const i0 = idx * chunk;
    exec(ctrl, k, i0, Math.min(total, i0 + chunk), thread, nat);
    Atomics.add(ctrl, DONE, 1);
  }
}
