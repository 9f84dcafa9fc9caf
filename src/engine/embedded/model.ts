// The decoder-only transformer (Llama / Mistral / Qwen2 / Qwen3) of the embedded engine.
// `forward` runs a batch of sequences at once: all their new tokens are stacked as rows, so the
// GEMMs see one matrix (prefill of one prompt and decode steps of many sequences alike), while
// attention runs per row against that row's own KV cache. Each sequence may carry its own LoRA
// adapter (a published version); the base GEMM is shared and the low-rank update is added per
// run of rows that share an adapter. `runLayer` can record a tape of one layer's internals, which
// the backward pass (backward.ts) uses after recomputing that layer from its checkpoint.
import { loadConfig, type ModelConfig } from './config.ts';
import { Arena } from './arena.ts';
import { loadWeights, type ModelWeights } from './weights.ts';
import { RopeTable, ropeFrequencies } from './rope.ts';
import { ArenaKvCache, arenaKv, type KvCache } from './kv-cache.ts';
import { PagedKvCache } from './kv-pages.ts';
import { rmsnormForward } from './ops/rmsnorm.ts';
import type { Kernel, KernelName } from './kernels/kernel.ts';
import { TsKernel } from './kernels/ts.ts';
import { WasmKernel } from './kernels/wasm.ts';
import { NativeKernel, loadNativeAddon } from './kernels/native.ts';
import type { LoraAdapter, LoraModule, LoraTarget } from './lora.ts';
import { unpackRow, type WeightsDtype } from './kernels/packed.ts';
import type { PlacementChoice } from './weight-memory.ts';
import { checkTokenIds } from '../types.ts';

/** `weights`: a full set of weights (a full-parameter training version) instead of the model's own. */
export interface BatchItem { tokens: ArrayLike<number>; cache: KvCache; adapter?: LoraAdapter | null; weights?: ModelWeights }

/**
 * `weightsDtype`: how the matrices are stored (bf16 halves their memory; compute stays float32).
 * `weightsPlacement`: in the WebAssembly memory or outside it (weight-memory.ts; default: outside only when they do not fit).
 */
export interface LoadOptions { kernel?: KernelName; threads?: number; maxContext?: number; weightsDtype?: WeightsDtype; weightsPlacement?: PlacementChoice }

/**
 * The kernel `name` asks for; without a name, OPENCLAW_RL_KERNEL's, else native where the addon
 * was built for this machine and WASM otherwise. Asking for native where it is missing is an error.
 */
export function createKernel(arena: Arena, name?: KernelName, threads?: number): Kernel {
  const chosen = name ?? defaultKernelName();
  if (chosen === 'ts') return new TsKernel();
  if (chosen === 'native') return new NativeKernel(arena, threads);
  return new WasmKernel(arena, threads);
}

const KERNEL_NAMES: readonly KernelName[] = ['native', 'wasm', 'ts'];

/** OPENCLAW_RL_KERNEL when set (tests force a backend with it), else native if it loads here, else wasm. */
export function defaultKernelName(): KernelName {
  const env = process.env.OPENCLAW_RL_KERNEL;
  if (env) {
    if (!KERNEL_NAMES.includes(env as KernelName)) throw new Error(`OPENCLAW_RL_KERNEL must be one of ${KERNEL_NAMES.join(', ')} (got '${env}')`);
    return env as KernelName;
  }
  return loadNativeAddon().addon ? 'native' : 'wasm';
}

/** Rows [row0, row0 + rows) use `adapter` (null: the base model). */
export interface Segment { row0: number; rows: number; adapter: LoraAdapter | null }

/** Row bookkeeping of one forward pass. */
export interface BatchContext {
  rows: number;
  /** the weights every row of this pass runs with */
  weights: ModelWeights;
  rowPos: Int32Array;
  rowCache: KvCache[];
  segments: Segment[];
}

/** One layer's internals, kept for its backward pass. `u` holds each LoRA module's s·A·x rows. */
export interface LayerTape {
  xn1: Float32Array; qkvRaw: Float32Array; qkv: Float32Array; att: Float32Array;
  x2: Float32Array; xn2: Float32Array; gu: Float32Array; act: Float32Array;
  u: Partial<Record<LoraTarget, Float32Array>>;
}

interface Workspace { x: Float32Array; xn: Float32Array; qkv: Float32Array; att: Float32Array; gu: Float32Array; act: Float32Array; u: Float32Array }

export class Transformer {
  readonly rope: RopeTable;
  readonly qDim: number;
  readonly kvDim: number;
  readonly ldqkv: number;
  readonly maxContext: number;
  readonly cfg: ModelConfig;
  readonly weights: ModelWeights;
  readonly kernel: Kernel;
  readonly arena: Arena;
  private capacity = 0;
  private rankCapacity = 0;
  private ws!: Workspace;
  /** hidden rows of a pass that mixes weights versions (grown as needed) */
  private mixed: Float32Array | null = null;

  constructor(cfg: ModelConfig, weights: ModelWeights, kernel: Kernel, arena: Arena, maxContext?: number) {
    this.cfg = cfg; this.weights = weights; this.kernel = kernel; this.arena = arena;
    this.rope = new RopeTable(ropeFrequencies(cfg));
    this.qDim = cfg.numHeads * cfg.headDim;
    this.kvDim = cfg.numKvHeads * cfg.headDim;
    this.ldqkv = this.qDim + 2 * this.kvDim;
    this.maxContext = Math.min(maxContext ?? cfg.maxPositionEmbeddings, cfg.maxPositionEmbeddings);
  }

  static load(dir: string, opts: LoadOptions = {}): Transformer {
    const cfg = loadConfig(dir);
    const arena = new Arena();
    const weights = loadWeights(dir, cfg, arena, opts.weightsDtype, opts.weightsPlacement);
    return new Transformer(cfg, weights, createKernel(arena, opts.kernel, opts.threads), arena, opts.maxContext);
  }

  /** A float32 cache in the arena (training, and serving where no paged caches are used). */
  newCache(maxPositions = this.maxContext): ArenaKvCache {
    return new ArenaKvCache(this.arena, this.cfg.numLayers, this.kvDim, maxPositions);
  }

  /** Scratch buffers for `rows` rows (grown by powers of two, reused across calls). */
  workspace(rows: number, maxRank = 0): Workspace {
    if (rows > this.capacity || maxRank > this.rankCapacity) {
      if (this.capacity > 0) for (const b of Object.values(this.ws)) this.arena.free(b);
      const cap = Math.max(this.capacity, 2 ** Math.ceil(Math.log2(Math.max(rows, 4))));
      const { hiddenSize: H, intermediateSize: I } = this.cfg;
      this.rankCapacity = Math.max(this.rankCapacity, maxRank, 1);
      this.ws = {
        x: this.arena.alloc(cap * H), xn: this.arena.alloc(cap * H), qkv: this.arena.alloc(cap * this.ldqkv),
        att: this.arena.alloc(cap * this.qDim), gu: this.arena.alloc(cap * 2 * I), act: this.arena.alloc(cap * I),
        u: this.arena.alloc(cap * this.rankCapacity),
      };
      this.capacity = cap;
    }
    return this.ws;
  }

  /** Embed every item's new tokens into ws.x, reserve cache room, and describe the rows. */
  prepare(items: BatchItem[]): { ws: Workspace; ctx: BatchContext } {
    const { cfg } = this;
    const W = items[0]?.weights ?? this.weights;
    if (items.some((it) => (it.weights ?? this.weights) !== W)) throw new Error('one pass runs with one set of weights (forward groups them)');
    const H = cfg.hiddenSize;
    let R = 0, maxRank = 0;
    for (const it of items) {
      checkTokenIds(it.tokens, cfg.vocabSize);
      it.cache.reserve(it.tokens.length);
      R += it.tokens.length;
      if (it.adapter) maxRank = Math.max(maxRank, it.adapter.config.rank);
    }
    const ws = this.workspace(R, maxRank);
    const rowPos = new Int32Array(R);
    const rowCache: KvCache[] = new Array(R);
    const segments: Segment[] = [];
    let r = 0;
    for (const it of items) {
      const adapter = it.adapter ?? null;
      const last = segments.at(-1);
      if (last && last.adapter === adapter) last.rows += it.tokens.length;
      else segments.push({ row0: r, rows: it.tokens.length, adapter });
      for (let t = 0; t < it.tokens.length; t++, r++) {
        const tok = it.tokens[t];
        unpackRow(W.embed, tok, ws.x, r * H);
        rowPos[r] = it.cache.length + t;
        rowCache[r] = it.cache;
      }
    }
    return { ws, ctx: { rows: R, weights: W, rowPos, rowCache, segments } };
  }

  /**
   * Runs every item's new tokens and appends their keys/values to the item's cache.
   * Returns the final-norm hidden states, one row per token in item order ([Σ tokens, hidden]);
   * the array is reused by the next call. `checkpoints[l]` (if given) receives layer l's input
   * rows and `checkpoints[numLayers]` the last layer's output: what the backward pass recomputes from.
   */
  forward(items: BatchItem[], checkpoints?: Float32Array[]): Float32Array {
    const first = items[0]?.weights ?? this.weights;
    if (checkpoints || items.every((it) => (it.weights ?? this.weights) === first)) return this.forwardWithContext(items, checkpoints).hidden;
    // sequences served by different full-weights versions: one pass per version, rows gathered in item order
    const H = this.cfg.hiddenSize;
    const offsets: number[] = [];
    let R = 0;
    for (const it of items) { offsets.push(R); R += it.tokens.length; }
    if (!this.mixed || this.mixed.length < R * H) {
      if (this.mixed) this.arena.free(this.mixed);
      this.mixed = this.arena.alloc(2 ** Math.ceil(Math.log2(Math.max(R, 4))) * H);
    }
    const groups = new Map<ModelWeights, number[]>();
    items.forEach((it, i) => { const w = it.weights ?? this.weights; groups.set(w, [...(groups.get(w) ?? []), i]); });
    for (const members of groups.values()) {
      const hidden = this.forwardWithContext(members.map((i) => items[i])).hidden;
      let row = 0;
      for (const i of members) {
        const n = items[i].tokens.length;
        this.mixed.set(hidden.subarray(row * H, (row + n) * H), offsets[i] * H);
        row += n;
      }
    }
    return this.mixed.subarray(0, R * H);
  }

  /** `forward`, also returning the rows' bookkeeping (the backward pass needs it); `tapes[l]` records layer l. */
  forwardWithContext(items: BatchItem[], checkpoints?: Float32Array[], tapes?: LayerTape[]): { hidden: Float32Array; ctx: BatchContext } {
    const { ws, ctx } = this.prepare(items);
    const { cfg } = this;
    const R = ctx.rows, H = cfg.hiddenSize;
    for (let l = 0; l < cfg.numLayers; l++) {
      if (checkpoints) checkpoints[l].set(ws.x.subarray(0, R * H));
      this.runLayer(l, ws, ctx, tapes?.[l] ?? null);
    }
    if (checkpoints) checkpoints[cfg.numLayers].set(ws.x.subarray(0, R * H));
    for (const it of items) it.cache.length += it.tokens.length;
    rmsnormForward(ws.xn, ws.x, ctx.weights.finalNorm, R, H, cfg.rmsNormEps);
    return { hidden: ws.xn.subarray(0, R * H), ctx };
  }

  /** y[rows, out] (+)= ũ·Bᵀ with ũ = s·A·x, for every segment that has an adapter with this module. */
  private lora(target: LoraTarget, l: number, ctx: BatchContext, x: Float32Array, ldx: number, y: Float32Array, ldy: number, ws: Workspace, tape: LayerTape | null): void {
    for (const seg of ctx.segments) {
      const m: LoraModule | undefined = seg.adapter?.layers[l][target];
      if (!m || !seg.adapter) continue;
      const r = seg.adapter.config.rank, s = seg.adapter.scale;
      const u = tape?.u[target] ?? ws.u;
      const useg = u.subarray(seg.row0 * r, (seg.row0 + seg.rows) * r);
      this.kernel.matmulNT(useg, x.subarray(seg.row0 * ldx), m.a, seg.rows, r, m.in, { lda: ldx });
      for (let i = 0; i < useg.length; i++) useg[i] *= s;
      this.kernel.matmulNT(y.subarray(seg.row0 * ldy), useg, m.b, seg.rows, m.out, r, { ldc: ldy, accumulate: true });
    }
  }

  /** Layer l on ws.x (its input; its output on return). With a tape, the internals are copied there. */
  runLayer(l: number, ws: Workspace, ctx: BatchContext, tape: LayerTape | null): void {
    const { cfg, kernel, qDim, kvDim, ldqkv } = this;
    const L = ctx.weights.layers[l];
    const R = ctx.rows, H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim;
    const { rowPos, rowCache } = ctx;
    const qkv = tape?.qkv ?? ws.qkv, att = tape?.att ?? ws.att, gu = tape?.gu ?? ws.gu, act = tape?.act ?? ws.act;

    // attention block
    const xn1 = tape?.xn1 ?? ws.xn;
    rmsnormForward(xn1, ws.x, L.inputNorm, R, H, cfg.rmsNormEps);
    kernel.matmulPacked(qkv, xn1, L.wqkv, R);
    this.lora('q_proj', l, ctx, xn1, H, qkv, ldqkv, ws, tape);
    this.lora('k_proj', l, ctx, xn1, H, qkv.subarray(qDim), ldqkv, ws, tape);
    this.lora('v_proj', l, ctx, xn1, H, qkv.subarray(qDim + kvDim), ldqkv, ws, tape);
    if (L.bqkv) for (let i = 0; i < R; i++) for (let j = 0; j < ldqkv; j++) qkv[i * ldqkv + j] += L.bqkv[j];
    if (tape) tape.qkvRaw.set(qkv.subarray(0, R * ldqkv));
    // every row of a pass uses paged bfloat16 caches (serving long contexts) or none does
    const paged = rowCache[0] instanceof PagedKvCache;
    const rowK = paged ? [] : rowCache.map((c) => arenaKv(c).k[l]), rowV = paged ? [] : rowCache.map((c) => arenaKv(c).v[l]);
    const bits = paged ? new Uint32Array(qkv.buffer, qkv.byteOffset, R * ldqkv) : null;
    for (let i = 0; i < R; i++) {
      const o = i * ldqkv;
      if (L.qNorm && L.kNorm) {
        rmsnormForward(qkv, qkv, L.qNorm, cfg.numHeads, hd, cfg.rmsNormEps, hd, hd, o, o);
        rmsnormForward(qkv, qkv, L.kNorm, cfg.numKvHeads, hd, cfg.rmsNormEps, hd, hd, o + qDim, o + qDim);
      }
      for (let h = 0; h < cfg.numHeads; h++) this.rope.apply(qkv, o + h * hd, rowPos[i]);
      for (let h = 0; h < cfg.numKvHeads; h++) this.rope.apply(qkv, o + qDim + h * hd, rowPos[i]);
      // this row's key and value go to its cache (a recompute writes the same values again)
      if (bits) (rowCache[i] as PagedKvCache).store(l, rowPos[i], bits, o + qDim, o + qDim + kvDim);
      else {
        rowK[i].set(qkv.subarray(o + qDim, o + qDim + kvDim), rowPos[i] * kvDim);
        rowV[i].set(qkv.subarray(o + qDim + kvDim, o + ldqkv), rowPos[i] * kvDim);
      }
    }
    if (paged) {
      if (!kernel.attentionPaged) throw new Error(`the ${kernel.name} kernel does not read paged KV caches`);
      kernel.attentionPaged({ q: qkv, ldq: ldqkv, out: att, rows: R, rowCache: rowCache as PagedKvCache[], rowPos, layer: l }, cfg);
    } else kernel.attention({ q: qkv, ldq: ldqkv, out: att, rows: R, rowK, rowV, rowPos }, cfg);
    kernel.matmulPacked(ws.x, att, L.wo, R, { accumulate: true }); // residual add for free
    this.lora('o_proj', l, ctx, att, qDim, ws.x, H, ws, tape);
    if (tape) tape.x2.set(ws.x.subarray(0, R * H));

    // MLP block
    const xn2 = tape?.xn2 ?? ws.xn;
    rmsnormForward(xn2, ws.x, L.postNorm, R, H, cfg.rmsNormEps);
    kernel.matmulPacked(gu, xn2, L.wgu, R);
    this.lora('gate_proj', l, ctx, xn2, H, gu, 2 * I, ws, tape);
    this.lora('up_proj', l, ctx, xn2, H, gu.subarray(I), 2 * I, ws, tape);
    kernel.swiglu(act, gu, R, I);
    kernel.matmulPacked(ws.x, act, L.wdown, R, { accumulate: true });
    this.lora('down_proj', l, ctx, act, I, ws.x, H, ws, tape);
  }

  /** Floats one layer's tape holds per row (for memory planning). */
  tapeFloatsPerRow(rank: number, targets: number): number {
    const { hiddenSize: H, intermediateSize: I } = this.cfg;
    return 3 * H + 2 * this.ldqkv + this.qDim + 3 * I + rank * targets;
  }

  allocTape(rows: number, rank: number, targets: LoraTarget[]): LayerTape {
    const { arena, cfg, qDim, ldqkv } = this;
    const H = cfg.hiddenSize, I = cfg.intermediateSize;
    // every entry is written whole by runLayer before it is read: no zero-fill
    const u: LayerTape['u'] = {};
    for (const t of targets) u[t] = arena.alloc(rows * rank, false);
    return {
      xn1: arena.alloc(rows * H, false), qkvRaw: arena.alloc(rows * ldqkv, false), qkv: arena.alloc(rows * ldqkv, false), att: arena.alloc(rows * qDim, false),
      x2: arena.alloc(rows * H, false), xn2: arena.alloc(rows * H, false), gu: arena.alloc(rows * 2 * I, false), act: arena.alloc(rows * I, false), u,
    };
  }

  freeTape(tape: LayerTape): void {
    for (const [k, v] of Object.entries(tape)) {
      if (k === 'u') for (const a of Object.values(v as LayerTape['u'])) this.arena.free(a!);
      else this.arena.free(v as Float32Array);
    }
  }

  /**
   * logits [rows, vocab] of `rows` hidden states (into `out`, an arena array of ≥ rows·vocab), with
   * `weights` (default the model's own), or per row (runs of rows sharing weights share a product).
   */
  logits(out: Float32Array, hidden: Float32Array, rows: number, weights: ModelWeights | readonly (ModelWeights | undefined)[] = this.weights): Float32Array {
    if (!Array.isArray(weights)) { this.kernel.matmulPacked(out, hidden, (weights as ModelWeights).lmHead, rows); return out; }
    const H = this.cfg.hiddenSize, V = this.cfg.vocabSize;
    for (let a = 0; a < rows;) {
      const w = weights[a] ?? this.weights;
      let b = a + 1;
      while (b < rows && (weights[b] ?? this.weights) === w) b++;
      this.kernel.matmulPacked(out.subarray(a * V), hidden.subarray(a * H), w.lmHead, b - a);
      a = b;
    }
    return out;
  }

  async close(): Promise<void> { await this.kernel.close(); }
}
