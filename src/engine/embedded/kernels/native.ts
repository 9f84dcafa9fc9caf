// The native kernel backend: the matrix multiplies (float32 arithmetic; packed weights float32, bf16 or int8) run in a small C addon (native/, built
// by scripts/build-native.mjs at install or build time) with AVX-512 or AVX2, chosen at load time;
// so does attention (paged bfloat16 caches, and float32 blocks with head sizes that are multiples of
// 8); SwiGLU, the loss head and other attention shapes stay on the WebAssembly kernels. Both run on the same worker
// pool over the same shared memory, so a job is split between threads exactly as before and each
// thread calls the addon on its own chunks. Where the addon is missing (no C compiler at install,
// another CPU) `createKernel` falls back to WebAssembly; `--kernel wasm` or OPENCLAW_RL_KERNEL=wasm
// forces it.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Arena } from '../arena.ts';
import type { AttentionBackwardBatch, AttentionBatch, MatmulOptions, PagedAttentionBatch } from './kernel.ts';
import type { AttentionShape } from '../ops/attention.ts';
import type { PackedMatrix } from './packed.ts';
import { WasmKernel } from './wasm.ts';
import { isExternal } from '../weight-memory.ts';
import { OP_NATIVE_NT, OP_NATIVE_NN, OP_NATIVE_TN, OP_NATIVE_PACKED, OP_NATIVE_PACKED_T, OP_NATIVE_PACKED_BF16, OP_NATIVE_PACKED_T_BF16, OP_NATIVE_PACKED_I8, OP_NATIVE_PACKED_T_I8, OP_NATIVE_ATTENTION_PAGED, OP_NATIVE_ATTENTION_F32, OP_NATIVE_ATTENTION_BACKWARD_F32, floatBits } from './wasm-pool.ts';

const PACKED_OP = { f32: OP_NATIVE_PACKED, bf16: OP_NATIVE_PACKED_BF16, int8: OP_NATIVE_PACKED_I8 } as const;
const PACKED_T_OP = { f32: OP_NATIVE_PACKED_T, bf16: OP_NATIVE_PACKED_T_BF16, int8: OP_NATIVE_PACKED_T_I8 } as const;

/** The addon's exports: operands are absolute addresses (numbers), see native/kernels.c. */
export interface NativeAddon {
  isa(): string;
  address(view: ArrayBufferView): number;
  gemm_packed(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_bf16(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t_bf16(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_i8(a: number, p: number, c: number, M: number, q0: number, q1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_packed_t_i8(a: number, p: number, c: number, M: number, i0: number, i1: number, K: number, N: number, lda: number, ldc: number, acc: number): void;
  gemm_nt(a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number): void;
  gemm_nn(a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number): void;
  gemm_tn(a: number, b: number, c: number, i0: number, i1: number, N: number, M: number, lda: number, ldb: number, ldc: number, acc: number): void;
  attention_paged_bf16(q: number, out: number, tiles: number, pages: number, ldq: number, u0: number, u1: number, nTiles: number, nHeads: number, nKv: number, hd: number, layer: number, P: number, window: number, scale: number): void;
  attention_f32(base: number, q: number, out: number, tiles: number, ldq: number, u0: number, u1: number, nTiles: number, nHeads: number, nKv: number, hd: number, window: number, scale: number): void;
  attention_backward_f32(base: number, dq: number, dout: number, out: number, q: number, table: number, segs: number, lddq: number, ldq: number, p0: number, p1: number, nHeads: number, nKv: number, hd: number, window: number, scale: number): void;
}

/** Query vectors one attention work unit holds at most (MAX_Q in native/attention-avx2.c). */
const ATTENTION_MAX_Q = 256;
/** The same for the float32-block forward (MAX_QF in native/attention-f32-avx2.c). */
const ATTENTION_F32_MAX_Q = 48;
/**
 * Positions a native backward unit sees at most: its probabilities and score gradients are two
 * [rows × positions] float32 scratch matrices (8 MiB each here); longer sequences take the
 * WebAssembly backward, which holds one row of scores at a time.
 */
const ATTENTION_BACKWARD_MAX_POSITIONS = 1024;

/** Chunks per thread of a many-row dX product (see matmulPackedT); fewer chunks copy less, more balance better. */
const PACKED_T_CHUNKS_PER_THREAD = 2;

/** Head sizes the float32-block attention of the addon takes: multiples of 8, at most 256 (others run on WebAssembly). */
function nativeHeadDim(s: AttentionShape): boolean { return s.headDim % 8 === 0 && s.headDim <= 256 && s.numHeads / s.numKvHeads <= ATTENTION_F32_MAX_Q; }

/**
 * The tiles of an attention call: runs of consecutive rows that read the same cache (`sameCache(r, r0)`)
 * at consecutive positions, at most `maxRows` long, as [first row, row count] pairs.
 */
function attentionTiles(rows: number, rowPos: Int32Array, maxRows: number, sameCache: (r: number, r0: number) => boolean): [number, number][] {
  const tiles: [number, number][] = [];
  for (let r = 0; r < rows;) {
    let n = 1;
    while (r + n < rows && n < maxRows && sameCache(r + n, r) && rowPos[r + n] === rowPos[r] + n) n++;
    tiles.push([r, n]);
    r += n;
  }
  return tiles;
}

/** Where the build puts the addon (the same relative place from src/ and from dist/); OPENCLAW_RL_NATIVE_PATH overrides it. */
export function nativeAddonPath(): string {
  return process.env.OPENCLAW_RL_NATIVE_PATH ?? fileURLToPath(new URL('../../../../build/native/kernels.node', import.meta.url));
}

let loaded: { addon: NativeAddon | null; why: string } | null = null;

/** The addon, or null with the reason it cannot be used here. */
export function loadNativeAddon(): { addon: NativeAddon | null; why: string } {
  if (loaded) return loaded;
  const path = nativeAddonPath();
  if (!existsSync(path)) return (loaded = { addon: null, why: `the native kernels were not built (${path} is missing; see scripts/build-native.mjs)` });
  try {
    const addon = createRequire(import.meta.url)(path) as NativeAddon;
    if (!addon.isa()) return (loaded = { addon: null, why: 'this CPU has neither AVX-512 nor AVX2 with FMA' });
    return (loaded = { addon, why: '' });
  } catch (e) {
    return (loaded = { addon: null, why: `the native kernels did not load: ${(e as Error).message}` });
  }
}

/** The WebAssembly kernel with its matrix multiplies on the native addon. */
export class NativeKernel extends WasmKernel {
  override readonly name: string;
  private readonly addon: NativeAddon;
  /** addresses of weight matrices outside the WebAssembly memory (their buffers never move) */
  private readonly addresses = new WeakMap<Float32Array, number>();

  constructor(arena: Arena, threads?: number, spinMs?: number) {
    const { addon, why } = loadNativeAddon();
    if (!addon) throw new Error(`--kernel native: ${why}`);
    super(arena, threads, spinMs, nativeAddonPath());
    this.addon = addon;
    this.name = `native-${addon.isa()}`;
  }

  /**
   * The job parameters that locate a packed matrix: its byte offset in the shared memory, then the
   * two 32-bit halves of its absolute address when it lives outside (weight-memory.ts), else 0, 0.
   * Every thread is in this process, so an address is as good on a helper as here.
   */
  private weightsAt(w: PackedMatrix): [number, number, number] {
    if (!isExternal(w)) return [w.data.byteOffset, 0, 0];
    let address = this.addresses.get(w.data);
    if (address === undefined) this.addresses.set(w.data, (address = this.addon.address(w.data)));
    return [0, address % 2 ** 32, Math.floor(address / 2 ** 32)];
  }

  addressOf(view: ArrayBufferView): number { return this.addon.address(view); }

  /**
   * Attention over paged bfloat16 caches (native/attention-avx2.c). Rows of one cache at
   * consecutive positions (a prefill chunk, or one decode row) are cut into tiles of up to
   * ATTENTION_MAX_Q / group rows; a work unit is one key/value head of one tile, head-major so
   * that consecutive units share that head's keys and values in the caches. Long tiles read a long
   * cached prefix fewer times; with few key/value heads they are cut shorter so that every thread
   * gets two units (a query's bits do not depend on its tile).
   */
  attentionPaged(b: PagedAttentionBatch, s: AttentionShape): void {
    const group = s.numHeads / s.numKvHeads, cap = Math.max(1, Math.floor(ATTENTION_MAX_Q / group));
    const tileRows = Math.max(1, Math.min(cap, Math.ceil(b.rows / Math.ceil((2 * this.threads) / s.numKvHeads))));
    const tiles: number[] = [], pageAddresses: number[] = [];
    const first = new Map<unknown, number>();
    let maxPos = 0;
    for (const [r, n] of attentionTiles(b.rows, b.rowPos, tileRows, (x, y) => b.rowCache[x] === b.rowCache[y])) {
      const c = b.rowCache[r];
      let at = first.get(c);
      if (at === undefined) { first.set(c, (at = pageAddresses.length)); for (const p of c.pages) pageAddresses.push(p.address); }
      tiles.push(r, n, b.rowPos[r], at);
      maxPos = Math.max(maxPos, b.rowPos[r] + n);
    }
    const nTiles = tiles.length / 4;
    const t = this.ints('attention-paged-tiles', tiles.length);
    t.set(tiles);
    const pt = this.doubles('attention-paged-pages', pageAddresses.length);
    pt.set(pageAddresses);
    const P = b.rowCache[0].pool.positions, units = nTiles * s.numKvHeads;
    this.dispatch(OP_NATIVE_ATTENTION_PAGED, units, b.rows * s.numHeads * maxPos * s.headDim,
      [b.q.byteOffset, b.ldq, b.out.byteOffset, t.byteOffset, pt.byteOffset, nTiles, s.numHeads, s.numKvHeads, s.headDim, b.layer, P, s.slidingWindow ?? 0, floatBits(1 / Math.sqrt(s.headDim))]);
  }

  /**
   * Attention over float32 key/value blocks (native/attention-f32-avx2.c): rows of one block at
   * consecutive positions are cut into tiles of up to ATTENTION_F32_MAX_Q / group rows; a work unit
   * is one key/value head of one tile, head-major. Each query's result does not depend on its tile.
   */
  override attention(b: AttentionBatch, s: AttentionShape): void {
    if (!nativeHeadDim(s)) { super.attention(b, s); return; }
    const group = s.numHeads / s.numKvHeads, tileRows = Math.max(1, Math.floor(ATTENTION_F32_MAX_Q / group));
    const tiles: number[] = [];
    let maxPos = 0;
    for (const [r, n] of attentionTiles(b.rows, b.rowPos, tileRows, (x, y) => b.rowK[x] === b.rowK[y] && b.rowV[x] === b.rowV[y])) {
      tiles.push(r, n, b.rowPos[r], b.rowK[r].byteOffset, b.rowV[r].byteOffset);
      maxPos = Math.max(maxPos, b.rowPos[r] + n);
    }
    const nTiles = tiles.length / 5;
    const t = this.ints('attention-f32-tiles', tiles.length);
    t.set(tiles);
    this.dispatch(OP_NATIVE_ATTENTION_F32, nTiles * s.numKvHeads, b.rows * s.numHeads * maxPos * s.headDim,
      [b.q.byteOffset, b.ldq, b.out.byteOffset, t.byteOffset, nTiles, s.numHeads, s.numKvHeads, s.headDim, s.slidingWindow ?? 0, floatBits(1 / Math.sqrt(s.headDim))]);
  }

  /**
   * The training backward on the addon when every sequence's rows sit at consecutive positions and
   * see at most ATTENTION_BACKWARD_MAX_POSITIONS keys; otherwise the WebAssembly one. A work unit
   * is one (sequence, key/value head), as there.
   */
  override attentionBackward(b: AttentionBackwardBatch, s: AttentionShape): void {
    if (!nativeHeadDim(s)) { super.attentionBackward(b, s); return; }
    const seqs = WasmKernel.sequences(b), window = s.slidingWindow ?? 0;
    for (let i = 0; i < seqs.length; i += 2) {
      const r0 = seqs[i], n = seqs[i + 1], pos0 = b.rowPos[r0], first = window > 0 ? Math.max(0, pos0 - window + 1) : 0;
      for (let r = r0 + 1; r < r0 + n; r++) if (b.rowPos[r] !== b.rowPos[r - 1] + 1) { super.attentionBackward(b, s); return; }
      if (pos0 + n - first > ATTENTION_BACKWARD_MAX_POSITIONS) { super.attentionBackward(b, s); return; }
    }
    const [table, segs] = this.backwardTables(b, seqs);
    const units = (seqs.length / 2) * s.numKvHeads;
    this.dispatch(OP_NATIVE_ATTENTION_BACKWARD_F32, units, units > 1 ? b.rows * s.numHeads * s.headDim : 0,
      [b.dq.byteOffset, b.lddq, b.dOut.byteOffset, b.out.byteOffset, b.q.byteOffset, b.ldq, table.byteOffset, segs.byteOffset, s.numHeads, s.numKvHeads, s.headDim, window, floatBits(1 / Math.sqrt(s.headDim))]);
  }

  override matmulNT(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? k, ldb = opts.ldb ?? k, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    this.dispatch(OP_NATIVE_NT, n, m * n * k, [a.byteOffset, b.byteOffset, c.byteOffset, m, k, lda, ldb, ldc, acc, 0, 0]);
  }

  override matmulPacked(c: Float32Array, a: Float32Array, w: PackedMatrix, m: number, opts: MatmulOptions = {}): void {
    const K = w.cols, N = w.rows, lda = opts.lda ?? K, ldc = opts.ldc ?? N, acc = opts.accumulate ? 1 : 0;
    const [offset, lo, hi] = this.weightsAt(w);
    // one row (decode) runs 8 panels at a time (native/gemm.h, gemv_group): chunks of whole groups
    this.dispatch(PACKED_OP[w.dtype ?? 'f32'], Math.ceil(N / 8), m * N * K, [a.byteOffset, offset, c.byteOffset, m, K, N, lda, ldc, acc, lo, hi], m === 1 ? 8 : undefined);
  }

  override matmulPackedT(c: Float32Array, a: Float32Array, w: PackedMatrix, m: number, opts: MatmulOptions = {}): void {
    const K = w.cols, N = w.rows, lda = opts.lda ?? N, ldc = opts.ldc ?? K, acc = opts.accumulate ? 1 : 0;
    const [offset, lo, hi] = this.weightsAt(w);
    // many rows (training's dX): every chunk copies the rows' dY columns it reads, once per block of W
    // (native/gemm.h, packed_t_unpacked), so chunks are wide: about PACKED_T_CHUNKS_PER_THREAD per thread
    const tile = m >= 8 ? Math.max(48, Math.ceil(K / (PACKED_T_CHUNKS_PER_THREAD * this.threads) / 48) * 48) : undefined;
    this.dispatch(PACKED_T_OP[w.dtype ?? 'f32'], K, m * N * K, [a.byteOffset, offset, c.byteOffset, m, K, N, lda, ldc, acc, lo, hi], tile);
  }

  override matmulNN(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? k, ldb = opts.ldb ?? n, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    this.dispatch(OP_NATIVE_NN, n, m * n * k, [a.byteOffset, b.byteOffset, c.byteOffset, m, k, lda, ldb, ldc, acc, 0, 0]);
  }

  override matmulTN(c: Float32Array, a: Float32Array, b: Float32Array, m: number, n: number, k: number, opts: MatmulOptions = {}): void {
    const lda = opts.lda ?? m, ldb = opts.ldb ?? n, ldc = opts.ldc ?? n, acc = opts.accumulate ? 1 : 0;
    this.dispatch(OP_NATIVE_TN, m, m * n * k, [a.byteOffset, b.byteOffset, c.byteOffset, n, k, lda, ldb, ldc, acc, 0, 0]);
  }
}
