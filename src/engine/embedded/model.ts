// The decoder-only transformer (Llama / Mistral / Qwen2 / Qwen3) of the embedded engine.
// `forward` runs a batch of sequences at once: all their new tokens are stacked as rows, so the
// GEMMs see one matrix (prefill of one prompt and decode steps of many sequences alike), while
// attention runs per row against that row's own KV cache.
import { loadConfig, type ModelConfig } from './config.ts';
import { Arena } from './arena.ts';
import { loadWeights, type ModelWeights } from './weights.ts';
import { RopeTable, ropeFrequencies } from './rope.ts';
import { KvCache } from './kv-cache.ts';
import { rmsnormForward } from './ops/rmsnorm.ts';
import { swigluForward } from './ops/swiglu.ts';
import type { Kernel, KernelName } from './kernels/kernel.ts';
import { TsKernel } from './kernels/ts.ts';
import { WasmKernel } from './kernels/wasm.ts';

export interface BatchItem { tokens: ArrayLike<number>; cache: KvCache }

export interface LoadOptions { kernel?: KernelName; threads?: number; maxContext?: number }

export function createKernel(arena: Arena, name: KernelName = 'wasm', threads?: number): Kernel {
  return name === 'ts' ? new TsKernel() : new WasmKernel(arena, threads);
}

export class Transformer {
  readonly rope: RopeTable;
  readonly qDim: number;
  readonly kvDim: number;
  readonly maxContext: number;
  private capacity = 0;
  private ws!: { x: Float32Array; xn: Float32Array; qkv: Float32Array; att: Float32Array; gu: Float32Array; act: Float32Array };

  readonly cfg: ModelConfig;
  readonly weights: ModelWeights;
  readonly kernel: Kernel;
  readonly arena: Arena;

  constructor(cfg: ModelConfig, weights: ModelWeights, kernel: Kernel, arena: Arena, maxContext?: number) {
    this.cfg = cfg; this.weights = weights; this.kernel = kernel; this.arena = arena;
    this.rope = new RopeTable(ropeFrequencies(cfg));
    this.qDim = cfg.numHeads * cfg.headDim;
    this.kvDim = cfg.numKvHeads * cfg.headDim;
    this.maxContext = Math.min(maxContext ?? cfg.maxPositionEmbeddings, cfg.maxPositionEmbeddings);
  }

  static load(dir: string, opts: LoadOptions = {}): Transformer {
    const cfg = loadConfig(dir);
    const arena = new Arena();
    const weights = loadWeights(dir, cfg, arena);
    return new Transformer(cfg, weights, createKernel(arena, opts.kernel, opts.threads), arena, opts.maxContext);
  }

  newCache(): KvCache {
    return new KvCache(this.arena, this.cfg.numLayers, this.kvDim, this.maxContext);
  }

  private workspace(rows: number) {
    if (rows > this.capacity) {
      if (this.capacity > 0) for (const b of Object.values(this.ws)) this.arena.free(b);
      const cap = 2 ** Math.ceil(Math.log2(Math.max(rows, 4)));
      const { hiddenSize: H, intermediateSize: I } = this.cfg;
      this.ws = {
        x: this.arena.alloc(cap * H), xn: this.arena.alloc(cap * H),
        qkv: this.arena.alloc(cap * (this.qDim + 2 * this.kvDim)), att: this.arena.alloc(cap * this.qDim),
        gu: this.arena.alloc(cap * 2 * I), act: this.arena.alloc(cap * I),
      };
      this.capacity = cap;
    }
    return this.ws;
  }

  /**
   * Runs every item's new tokens and appends their keys/values to the item's cache.
   * Returns the final-norm hidden states, one row per token in item order ([Σ tokens, hidden]);
   * the array is reused by the next call.
   */
  forward(items: BatchItem[]): Float32Array {
    const { cfg, weights: W, kernel } = this;
    const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, qDim = this.qDim, kvDim = this.kvDim;
    const ldqkv = qDim + 2 * kvDim;
    let R = 0;
    for (const it of items) { it.cache.reserve(it.tokens.length); R += it.tokens.length; }
    const ws = this.workspace(R);
    const rowPos = new Int32Array(R);
    const rowCache: KvCache[] = new Array(R);

    let r = 0;
    for (const it of items) {
      for (let t = 0; t < it.tokens.length; t++, r++) {
        const tok = it.tokens[t];
        if (!Number.isInteger(tok) || tok < 0 || tok >= cfg.vocabSize) throw new RangeError(`token id ${tok} is outside the vocabulary (0..${cfg.vocabSize - 1})`);
        ws.x.set(W.embed.subarray(tok * H, (tok + 1) * H), r * H);
        rowPos[r] = it.cache.length + t;
        rowCache[r] = it.cache;
      }
    }

    for (let l = 0; l < cfg.numLayers; l++) {
      const L = W.layers[l];
      const rowK = rowCache.map((c) => c.k[l]), rowV = rowCache.map((c) => c.v[l]);
      // attention block
      rmsnormForward(ws.xn, ws.x, L.inputNorm, R, H, cfg.rmsNormEps);
      kernel.matmulNT(ws.qkv, ws.xn, L.wqkv, R, ldqkv, H);
      for (let i = 0; i < R; i++) {
        const o = i * ldqkv;
        if (L.bqkv) for (let j = 0; j < ldqkv; j++) ws.qkv[o + j] += L.bqkv[j];
        if (L.qNorm && L.kNorm) {
          rmsnormForward(ws.qkv, ws.qkv, L.qNorm, cfg.numHeads, hd, cfg.rmsNormEps, hd, hd, o, o);
          rmsnormForward(ws.qkv, ws.qkv, L.kNorm, cfg.numKvHeads, hd, cfg.rmsNormEps, hd, hd, o + qDim, o + qDim);
        }
        for (let h = 0; h < cfg.numHeads; h++) this.rope.apply(ws.qkv, o + h * hd, rowPos[i]);
        for (let h = 0; h < cfg.numKvHeads; h++) this.rope.apply(ws.qkv, o + qDim + h * hd, rowPos[i]);
        // append this row's key and value to its cache
        rowK[i].set(ws.qkv.subarray(o + qDim, o + qDim + kvDim), rowPos[i] * kvDim);
        rowV[i].set(ws.qkv.subarray(o + qDim + kvDim, o + ldqkv), rowPos[i] * kvDim);
      }
      kernel.attention({ q: ws.qkv, ldq: ldqkv, out: ws.att, rows: R, rowK, rowV, rowPos }, cfg);
      kernel.matmulNT(ws.x, ws.att, L.wo, R, H, qDim, { accumulate: true }); // residual add for free
      // MLP block
      rmsnormForward(ws.xn, ws.x, L.postNorm, R, H, cfg.rmsNormEps);
      kernel.matmulNT(ws.gu, ws.xn, L.wgu, R, 2 * I, H);
      swigluForward(ws.act, ws.gu, R, I);
      kernel.matmulNT(ws.x, ws.act, L.wdown, R, H, I, { accumulate: true });
    }
    for (const it of items) it.cache.length += it.tokens.length;
    rmsnormForward(ws.xn, ws.x, W.finalNorm, R, H, cfg.rmsNormEps);
    return ws.xn.subarray(0, R * H);
  }

  /** logits [rows, vocab] of `rows` hidden states (into `out`, an arena array of ≥ rows·vocab). */
  logits(out: Float32Array, hidden: Float32Array, rows: number): Float32Array {
    this.kernel.matmulNT(out, hidden, this.weights.lmHead, rows, this.cfg.vocabSize, this.cfg.hiddenSize);
    return out;
  }

  async close(): Promise<void> { await this.kernel.close(); }
}
