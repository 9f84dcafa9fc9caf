// WASM SIMD kernels (assembly/kernels.ts, built by scripts/build-wasm.ts), run by the calling
// thread plus `threads - 1` helper workers that share the arena's memory.
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import type { Arena } from '../arena.ts';
import type { Kernel, MatmulOptions, AttentionBatch, AttentionBackwardBatch } from './kernel.ts';
import type { AttentionShape } from '../ops/attention.ts';
import { panelSlots, type PackedMatrix } from './packed.ts';
import { isExternal } from '../weight-memory.ts';
import { createRequire } from 'node:module';
import { GEN, CLAIM, DONE, NCHUNKS, CHUNK, TOTAL, OP, STOP, P, CTRL_INTS, CLOSED, MAX_CHUNKS, OP_GEMM, OP_ATTENTION, OP_NN, OP_TN, OP_ATTENTION_BACKWARD, OP_ROWS_LSE, OP_ROWS_SOFTMAX_GRAD, OP_PACKED, OP_PACKED_T, OP_PACKED_BF16, OP_PACKED_T_BF16, OP_PACKED_I8, OP_PACKED_T_I8, runChunks, exec, floatBits, opTile, bindNative, type WasmKernelExports, type NativeBinding } from './wasm-pool.ts';

const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
let cachedModule: WebAssembly.Module | null = null;
export function wasmModule(): WebAssembly.Module {
  cachedModule ??= new WebAssembly.Module(readFileSync(new URL('./kernels.wasm', import.meta.url)));
  return cachedModule;
}

const PACKED_OP = { f32: OP_PACKED, bf16: OP_PACKED_BF16, int8: OP_PACKED_I8 } as const;
const PACKED_T_OP = { f32: OP_PACKED_T, bf16: OP_PACKED_T_BF16, int8: OP_PACKED_T_I8 } as const;

/** Below this many multiply-adds a job runs on the calling thread alone (waking helpers costs more). */
const PARALLEL_MIN_MACS = 1 << 16;
/** Float slots of the window through which weights outside the memory are copied (64 MiB, inside the KV plan's headroom). */
const STAGING_SLOTS = 1 << 24;

export class WasmKernel implements Kernel {
  readonly name: string = 'wasm-simd';
  readonly threads: number;
  private readonly arena: Arena;
  private readonly k: WasmKernelExports;
  private readonly ctrl: Int32Array;
  private readonly helpers: Worker[] = [];
  private tag = 0;
  /** arena-backed integer tables (per-row pointers for attention), and per-thread score scratch */
  private readonly intSlots = new Map<string, Float32Array>();
  private scratch: Float32Array | null = null;
  /** the native addon on this thread (NativeKernel), else null */
  private readonly nat: NativeBinding | null;

  /** `nativePath`: also load the native addon on every thread (for NativeKernel's jobs). */
  constructor(arena: Arena, threads = availableParallelism(), spinMs = 2, nativePath?: string) {
    this.arena = arena;
    this.threads = Math.max(1, threads);
    const module = wasmModule();
    const instance = new WebAssembly.Instance(module, { env: { memory: arena.memory, abort: () => { throw new Error('wasm abort'); } } });
    this.k = instance.exports as unknown as WasmKernelExports;
    this.ctrl = new Int32Array(new SharedArrayBuffer(CTRL_INTS * 4));
    this.nat = nativePath ? bindNative(createRequire(import.meta.url), nativePath, arena.memory) : null;
    for (let i = 1; i < this.threads; i++) {
      const w = new Worker(new URL(`./wasm-helper${EXT}`, import.meta.url), { workerData: { module, memory: arena.memory, ctrl: this.ctrl.buffer, spinMs, thread: i, nativePath } });
      w.unref();
      this.helpers.push(w);
    }
  }

  /** A private control block for jobs this thread runs alone. */
  private readonly local = new Int32Array(CTRL_INTS);

  /**
   * Run job `op` over [0, total): on this thread alone when there are no helpers or the job is
   * smaller than `macs` worth waking them for, else shared with the helpers; chunks are multiples
   * of `tile` (default: the op's own, opTile).
   */
  protected dispatch(op: number, total: number, macs: number, params: number[], tile = opTile(op)): void {
    if (this.helpers.length === 0 || macs < PARALLEL_MIN_MACS) {
      this.local[OP] = op;
      for (let i = 0; i < params.length; i++) this.local[P + i] = params[i];
      exec(this.local, this.k, 0, total, 0, this.nat);
      return;
    }
    this.run(op, total, params, tile);
  }

  /** Publish a job, work on it, and return when every chunk is done. */
  private run(op: number, total: number, params: number[], tile: number): void {
    // ~8 chunks per thread balances uneven progress; chunks are multiples of each kernel's tile
    let chunk = Math.ceil(Math.max(1, Math.ceil(total / (this.threads * 8))) / tile) * tile;
    if (Math.ceil(total / chunk) > MAX_CHUNKS) chunk = Math.ceil(total / MAX_CHUNKS / tile) * tile;
    const nChunks = Math.ceil(total / chunk);
    const ctrl = this.ctrl;
    this.tag = (this.tag + 1) & 0x7fff;
    const tag = this.tag;
    ctrl[OP] = op; ctrl[NCHUNKS] = nChunks; ctrl[CHUNK] = chunk; ctrl[TOTAL] = total;
    for (let i = 0; i < params.length; i++) ctrl[P + i] = params[i];
    Atomics.store(ctrl, DONE, 0);
    Atomics.store(ctrl, CLAIM, tag << 16);
    Atomics.store(ctrl, GEN, tag);
    Atomics.notify(ctrl, GEN);
    runChunks(ctrl, this.k, tag, 0, this.nat);
    while (Atomics.load(ctrl, DONE) < nChunks);
    Atomics.store(ctrl, CLAIM, (tag << 16) | CLOSED);
  }

  matmulNT(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? k, ldb = opts.ldb ?? k, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    this.dispatch(OP_GEMM, n, m * n * k, [a.byteOffset, b.byteOffset, c.byteOffset, m, k, lda, ldb, ldc, acc]);
  }

  /** Staging window for matrices outside the memory, allocated at first use (the native backend never needs it). */
  private window: Float32Array | null = null;
  /** the window's largest size in float slots (tests shrink it to split small matrices into several ranges) */
  stagingSlots = STAGING_SLOTS;

  /**
   * A packed product whose weights live outside this memory (weight-memory.ts): whole panels are
   * copied into the staging window, a range at a time, and `run` computes with that range as the
   * matrix; `row0` is its first row, `first` whether it is the first range.
   */
  private staged(w: PackedMatrix, run: (part: PackedMatrix, row0: number, first: boolean) => void): void {
    const panels = Math.ceil(w.rows / 8), slots = panelSlots(w.cols, w.dtype);
    const want = Math.min(this.stagingSlots, panels * slots);
    if (!this.window || this.window.length < Math.max(want, slots) || this.window.length > Math.max(this.stagingSlots, slots)) {
      if (this.window) this.arena.free(this.window);
      this.window = this.arena.alloc(Math.max(want, slots), false);
    }
    const per = Math.floor(this.window.length / slots);
    for (let p0 = 0; p0 < panels; p0 += per) {
      const p1 = Math.min(panels, p0 + per);
      this.window.set(w.data.subarray(p0 * slots, p1 * slots));
      const part: PackedMatrix = { data: this.window.subarray(0, (p1 - p0) * slots), rows: Math.min(w.rows, 8 * p1) - 8 * p0, cols: w.cols, ...(w.dtype ? { dtype: w.dtype } : {}) };
      run(part, 8 * p0, p0 === 0);
    }
  }

  matmulPacked(c: Float32Array, a: Float32Array, w: PackedMatrix, m: number, opts: MatmulOptions = {}): void {
    const K = w.cols, N = w.rows, lda = opts.lda ?? K, ldc = opts.ldc ?? N, acc = opts.accumulate ? 1 : 0;
    if (isExternal(w)) {
      // each range gives its own output columns, computed exactly as in one product (no bits change)
      this.staged(w, (part, row0) => this.matmulPacked(c.subarray(row0), a, part, m, { lda, ldc, accumulate: opts.accumulate }));
      return;
    }
    this.dispatch(PACKED_OP[w.dtype ?? 'f32'], Math.ceil(N / 8), m * N * K, [a.byteOffset, w.data.byteOffset, c.byteOffset, m, K, N, lda, ldc, acc]);
  }

  matmulPackedT(c: Float32Array, a: Float32Array, w: PackedMatrix, m: number, opts: MatmulOptions = {}): void {
    const K = w.cols, N = w.rows, lda = opts.lda ?? N, ldc = opts.ldc ?? K, acc = opts.accumulate ? 1 : 0;
    if (isExternal(w)) {
      // ranges split the sum over W's rows: a matrix wider than the window is summed range by range
      this.staged(w, (part, row0, first) => this.matmulPackedT(c, a.subarray(row0), part, m, { lda, ldc, accumulate: first ? opts.accumulate : true }));
      return;
    }
    this.dispatch(PACKED_T_OP[w.dtype ?? 'f32'], K, m * N * K, [a.byteOffset, w.data.byteOffset, c.byteOffset, m, K, N, lda, ldc, acc]);
  }

  matmulNN(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? k, ldb = opts.ldb ?? n, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    this.dispatch(OP_NN, n, m * n * k, [a.byteOffset, b.byteOffset, c.byteOffset, m, k, lda, ldb, ldc, acc]);
  }

  matmulTN(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? m, ldb = opts.ldb ?? n, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    this.dispatch(OP_TN, m, m * n * k, [a.byteOffset, b.byteOffset, c.byteOffset, n, k, lda, ldb, ldc, acc]);
  }

  /** A Float64 view of `n` doubles in the shared memory, reused per slot name. */
  protected doubles(slot: string, n: number): Float64Array {
    const f = this.ints(slot, 2 * n);
    return new Float64Array(f.buffer, f.byteOffset, n);
  }

  /** An Int32 view of `n` ints in the shared memory, reused per slot name. */
  protected ints(slot: string, n: number): Int32Array {
    let buf = this.intSlots.get(slot);
    if (!buf || buf.length < n) {
      if (buf) this.arena.free(buf);
      buf = this.arena.alloc(Math.max(n * 2, 256));
      this.intSlots.set(slot, buf);
    }
    return new Int32Array(buf.buffer, buf.byteOffset, n);
  }

  /** Per-thread float scratch of `perThread` values; returns [base byte offset, per-thread byte stride]. */
  private threadScratch(perThread: number): [number, number] {
    const stride = Math.ceil(perThread / 16) * 16;
    if (!this.scratch || this.scratch.length < stride * this.threads) {
      if (this.scratch) this.arena.free(this.scratch);
      this.scratch = this.arena.alloc(stride * this.threads * 2);
    }
    return [this.scratch.byteOffset, Math.floor(this.scratch.length / this.threads) * 4];
  }

  private static maxPosition(b: AttentionBatch): number {
    let maxPos = 0;
    for (let r = 0; r < b.rows; r++) maxPos = Math.max(maxPos, b.rowPos[r] + 1);
    return maxPos;
  }

  attention(batch: AttentionBatch, s: AttentionShape): void {
    const { rows } = batch;
    const maxPos = WasmKernel.maxPosition(batch);
    const t = this.ints('attention', rows * 3);
    for (let r = 0; r < rows; r++) {
      t[3 * r] = batch.rowK[r].byteOffset; t[3 * r + 1] = batch.rowV[r].byteOffset; t[3 * r + 2] = batch.rowPos[r];
    }
    // room for two heads' scores, each padded to four (the heads-of-8 kernel does two heads at once)
    const [scratch, scratchStride] = this.threadScratch(2 * maxPos + 8);
    const pairs = rows * s.numHeads;
    const window = s.slidingWindow ?? 0, scale = 1 / Math.sqrt(s.headDim);
    this.dispatch(OP_ATTENTION, pairs, pairs * maxPos * s.headDim, [batch.q.byteOffset, batch.ldq, batch.out.byteOffset, t.byteOffset, s.numHeads, s.numKvHeads, s.headDim, window, floatBits(scale), scratch, scratchStride]);
  }

  /** The sequences of a training batch as [first row, row count] pairs: a sequence is a run of rows sharing one cache block. */
  protected static sequences(b: AttentionBackwardBatch): number[] {
    const seqs: number[] = [];
    for (let r = 0; r < b.rows; r++) {
      if (r === 0 || b.rowK[r] !== b.rowK[r - 1]) seqs.push(r, 1); else seqs[seqs.length - 1]++;
    }
    return seqs;
  }

  /** The backward's tables in the shared memory: per row K, V, dK, dV offsets and position; and `seqs`. */
  protected backwardTables(b: AttentionBackwardBatch, seqs: number[]): [Int32Array, Int32Array] {
    const t = this.ints('attention-backward', b.rows * 5);
    for (let r = 0; r < b.rows; r++) {
      t[5 * r] = b.rowK[r].byteOffset; t[5 * r + 1] = b.rowV[r].byteOffset; t[5 * r + 2] = b.rowDK[r].byteOffset; t[5 * r + 3] = b.rowDV[r].byteOffset; t[5 * r + 4] = b.rowPos[r];
    }
    const segs = this.ints('attention-backward-seqs', seqs.length);
    segs.set(seqs);
    return [t, segs];
  }

  attentionBackward(b: AttentionBackwardBatch, s: AttentionShape): void {
    const maxPos = WasmKernel.maxPosition(b);
    const seqs = WasmKernel.sequences(b);
    const [t, segs] = this.backwardTables(b, seqs);
    // room for two heads' scores, each padded to four (the heads-of-8 kernel does two heads at once)
    const [scratch, scratchStride] = this.threadScratch(2 * maxPos + 8);
    const units = (seqs.length / 2) * s.numKvHeads;
    const window = s.slidingWindow ?? 0, scale = 1 / Math.sqrt(s.headDim);
    // one unit alone is not worth sharing
    this.dispatch(OP_ATTENTION_BACKWARD, units, units > 1 ? PARALLEL_MIN_MACS : 0, [b.dq.byteOffset, b.lddq, b.dOut.byteOffset, b.out.byteOffset, b.q.byteOffset, b.ldq, t.byteOffset, segs.byteOffset, s.numHeads, s.numKvHeads, s.headDim, window, floatBits(scale), scratch, scratchStride]);
  }

  // element-wise and cheap next to the GEMMs around them: one thread, no hand-off
  swiglu(out: Float32Array, gu: Float32Array, rows: number, inter: number): void { this.k.swiglu(out.byteOffset, gu.byteOffset, 0, rows, inter); }
  swigluBackward(dgu: Float32Array, dout: Float32Array, gu: Float32Array, rows: number, inter: number): void { this.k.swiglu_backward(dgu.byteOffset, dout.byteOffset, gu.byteOffset, 0, rows, inter); }

  rowsLogSumExp(logits: Float32Array, rows: number, V: number, invT: number, lse: Float32Array): void {
    this.dispatch(OP_ROWS_LSE, rows, rows * V, [logits.byteOffset, V, floatBits(invT), lse.byteOffset]);
  }

  rowsSoftmaxGrad(logits: Float32Array, rows: number, V: number, invT: number, lse: Float32Array, coef: Float32Array): void {
    this.dispatch(OP_ROWS_SOFTMAX_GRAD, rows, rows * V, [logits.byteOffset, V, floatBits(invT), lse.byteOffset, coef.byteOffset]);
  }

  async close(): Promise<void> {
    Atomics.store(this.ctrl, STOP, 1);
    Atomics.add(this.ctrl, GEN, 1);
    Atomics.notify(this.ctrl, GEN);
    await Promise.all(this.helpers.map((w) => w.terminate()));
    this.helpers.length = 0;
  }
}
