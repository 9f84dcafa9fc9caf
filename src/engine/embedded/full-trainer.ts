// Full-parameter training on the embedded engine: every weight — embeddings, RMSNorm weights (incl.
// Qwen3's q/k norms), q/k/v biases, all projections, the LM head — gets a gradient and an AdamW
// update. The trained weights are a copy of the base model's (the base keeps serving version 0 and
// is the KL reference); tied embeddings are one tensor receiving both the embedding and the LM head
// gradient. Losses, token-level aggregation, clipping and the refusal of non-finite steps are those
// of LoRA training (trainer-core.ts). Memory: weights + gradients + two Adam moments = 16 bytes per
// parameter in float32, plus the base weights and the activations of one packed group.
import type { Transformer } from './model.ts';
import type { ModelWeights } from './weights.ts';
import { FullBackprop, type LayerGrads } from './full-backward.ts';
import { cloneWeights, freeWeights, fullParams, sumSquares, adamwFull, type FullParam } from './full-weights.ts';
import { rmsnormBackward, rmsnormWeightGrad } from './ops/rmsnorm.ts';
import { scoreResponses, scoreHidden, fedTokens, type ResponseRequest } from './score.ts';
import { TrainerCore, WASM_MEMORY_BYTES, type TokenTerm, type DenseTermsOf } from './trainer-core.ts';
import { updateVerdict, GUARD_DEFAULTS, type GuardLimits } from '../../learn/weights-guard.ts';
import { EngineError, type Datum, type OptimStepMetrics, type AdamParams } from '../types.ts';

/** The AdamW state of full training: row-major moments per parameter, and the step count. */
export interface FullOptimizer { step: number; m: Float32Array[]; v: Float32Array[] }

export class FullTrainer extends TrainerCore {
  /** the weights being trained (what 'current' scores and saveWeights snapshots) */
  readonly weights: ModelWeights;
  readonly params: FullParam[];
  /** row-major gradients, one per parameter */
  readonly grads: Float32Array[];
  readonly optimizer: FullOptimizer;
  /** limits of the weights guard (see learn/weights-guard.ts) */
  guard: Pick<GuardLimits, 'maxUpdateRatio' | 'normFloor'> = GUARD_DEFAULTS;
  private readonly layerGrads: LayerGrads[];
  private readonly gEmbed: Float32Array;
  private readonly gHead: Float32Array;
  private readonly gFinalNorm: Float32Array;
  private readonly backprop: FullBackprop;

  /** Start from `from` (default: a copy of the model's base weights, which this trainer then owns). */
  constructor(model: Transformer, from?: ModelWeights) {
    // AdamW updates the packed weights in place: steps of lr·m/√v vanish in bfloat16's 8-bit mantissa
    if (((from ?? model.weights).dtype ?? 'f32') !== 'f32') throw new EngineError('bad_request', `full-parameter training needs float32 weights: load the model with --weights-dtype f32 (LoRA trains on ${(from ?? model.weights).dtype} weights)`);
    // the trained copy, its gradients and the forward's workspace all live in the 4 GiB WebAssembly memory
    if (model.weights.placement === 'external') throw new EngineError('bad_request', `full-parameter training keeps a copy of the weights and their gradients in the 4 GiB WebAssembly memory, and this model's matrices (${(model.weights.bytes / 2 ** 30).toFixed(2)} GiB) are held outside it: train a LoRA adapter instead`);
    super(model);
    this.weights = from ?? cloneWeights(model.weights, model.arena);
    this.params = fullParams(model.cfg, this.weights);
    const { arena } = model;
    this.grads = this.params.map((p) => arena.alloc(p.rows * p.cols));
    this.optimizer = { step: 0, m: this.params.map((p) => new Float32Array(p.rows * p.cols)), v: this.params.map((p) => new Float32Array(p.rows * p.cols)) };
    const gradOf = (data: Float32Array | null) => {
      if (!data) return null;
      const i = this.params.findIndex((p) => p.data === data);
      if (i < 0) throw new Error('internal: a weight without a parameter entry');
      return this.grads[i];
    };
    const w = this.weights;
    this.layerGrads = w.layers.map((L) => ({
      inputNorm: gradOf(L.inputNorm)!, postNorm: gradOf(L.postNorm)!, wqkv: gradOf(L.wqkv.data)!, bqkv: gradOf(L.bqkv),
      qNorm: gradOf(L.qNorm), kNorm: gradOf(L.kNorm), wo: gradOf(L.wo.data)!, wgu: gradOf(L.wgu.data)!, wdown: gradOf(L.wdown.data)!,
    }));
    this.gEmbed = gradOf(w.embed.data)!;
    this.gHead = gradOf(w.lmHead.data)!; // the same array as gEmbed when tied
    this.gFinalNorm = gradOf(w.finalNorm)!;
    this.backprop = new FullBackprop(model);
  }

  /** Parameters trained (each tied tensor once). */
  get parameterCount(): number { return this.params.reduce((a, p) => a + p.rows * p.cols, 0); }

  /** Log-probs of each response token under the trained weights (`base`: the model's own). */
  logprobs(data: ResponseRequest[], base = false, temperature = 1): Float32Array[] {
    return scoreResponses(this.model, data, null, temperature, base ? undefined : this.weights);
  }

  protected baseLogprobs(data: Datum[], temperature: number): Float32Array[] { return this.logprobs(data, true, temperature); }

  protected baseHidden(data: Datum[]): Float32Array[] { return scoreHidden(this.model, data, null); }

  protected pendingGradNorm(): number { return Math.sqrt(sumSquares(this.grads)) / Math.max(this.pendingTokens, 1); }

  protected step(group: Datum[], term: TokenTerm, temperatureOf: (d: Datum) => number, dense: DenseTermsOf | null): void {
    const { model, weights } = this;
    const { arena, cfg } = model;
    const H = cfg.hiddenSize, L = cfg.numLayers;
    const items = group.map((d) => ({ tokens: fedTokens(d), cache: model.newCache(), adapter: null, weights }));
    const R = items.reduce((a, it) => a + it.tokens.length, 0);
    const checkpoints = Array.from({ length: L + 1 }, () => arena.alloc(R * H, false));
    const dx = arena.alloc(R * H);
    const dK: Float32Array[] = [], dV: Float32Array[] = [];
    const tapeBytes = R * L * model.tapeFloatsPerRow(0, 0) * 4;
    const keepTapes = tapeBytes <= Math.min(this.tapeBudgetBytes, WASM_MEMORY_BYTES - arena.usedBytes - 512 * 2 ** 20);
    const tapes = keepTapes ? Array.from({ length: L }, () => model.allocTape(R, 0, [])) : undefined;
    try {
      const { hidden, ctx } = model.forwardWithContext(items, checkpoints, tapes);
      let row = 0;
      group.forEach((d, k) => {
        this.head(hidden, row + d.promptIds.length - 1, d.responseIds, d.distill?.ids ?? null, temperatureOf(d), (t, logp, setLogp) => term(k, t, logp, setLogp), dx, weights.lmHead, this.gHead, dense?.(k) ?? null);
        row += items[k].tokens.length;
      });
      const dFinal = arena.alloc(R * H);
      rmsnormWeightGrad(this.gFinalNorm, dx, checkpoints[L], R, H, cfg.rmsNormEps);
      rmsnormBackward(dFinal, dx, checkpoints[L], weights.finalNorm, R, H, cfg.rmsNormEps, false);
      dx.set(dFinal);
      arena.free(dFinal);
      const blocks = items.map((it) => [arena.alloc(it.tokens.length * model.kvDim), arena.alloc(it.tokens.length * model.kvDim)]);
      items.forEach((it, k) => { for (let t = 0; t < it.tokens.length; t++) { dK.push(blocks[k][0]); dV.push(blocks[k][1]); } });
      for (let l = L - 1; l >= 0; l--) this.backprop.layer(l, checkpoints[l], ctx, dx, dK, dV, tapes?.[l] ?? null, this.layerGrads[l]);
      for (const [a, b] of blocks) { arena.free(a); arena.free(b); }
      // the embedding rows: dx is now ∂L/∂(each row's embedding)
      row = 0;
      for (const it of items) {
        for (const tok of it.tokens) {
          const g = this.gEmbed, o = tok * H, r = row * H;
          for (let i = 0; i < H; i++) g[o + i] += dx[r + i];
          row++;
        }
      }
    } finally {
      for (const c of checkpoints) arena.free(c);
      for (const t of tapes ?? []) model.freeTape(t);
      arena.free(dx);
      for (const it of items) it.cache.release();
    }
  }

  /**
   * Mean the accumulated gradients over their loss tokens, clip, and update every weight in place.
   * A step whose loss or gradients are not finite is refused: weights unchanged, gradients dropped.
   * So is one the weights guard rejects (non-finite weights, or an update larger than the weights
   * themselves): it is measured in a first pass that writes nothing, and applied only if it passes.
   */
  optimStep(p: AdamParams): OptimStepMetrics {
    if (!(Number.isFinite(p.learningRate) && p.learningRate >= 0)) throw new EngineError('bad_request', `learningRate must be a finite non-negative number (got ${p.learningRate})`);
    const tokens = this.pendingTokens;
    const scale = p.normalize === 'none' ? 1 : 1 / Math.max(tokens, 1);
    const norm = Math.sqrt(sumSquares(this.grads)) * scale;
    const reason = this.nonFinite ?? (Number.isFinite(norm) ? null : 'non-finite gradient norm');
    const clip = p.gradClipNorm ?? 1;
    let skipped = false;
    let why = reason;
    if (reason) skipped = true;
    else if (tokens > 0) {
      const factor = scale * (clip > 0 && norm > clip ? clip / norm : 1);
      const step = this.optimizer.step + 1;
      const stats = { finite: true, normSqBefore: 0, deltaNormSq: 0 };
      this.params.forEach((param, i) => adamwFull(param, this.grads[i], this.optimizer.m[i], this.optimizer.v[i], step, p, factor, stats, true));
      why = updateVerdict(stats, this.guard);
      if (why) skipped = true;
      else {
        this.optimizer.step = step;
        this.params.forEach((param, i) => adamwFull(param, this.grads[i], this.optimizer.m[i], this.optimizer.v[i], step, p, factor));
      }
    }
    for (const g of this.grads) g.fill(0);
    this.pendingTokens = 0;
    this.nonFinite = null;
    return { step: this.optimizer.step, gradNorm: norm, skipped, reason: why ?? undefined, tokens, learningRate: p.learningRate };
  }

  /** Zero the accumulated gradients without stepping (tests, abandoned batches). */
  zeroGrads(): void { for (const g of this.grads) g.fill(0); this.pendingTokens = 0; this.nonFinite = null; }

  /** Free the gradients and work buffers; `keepWeights` leaves the trained weights (a version may hold them). */
  release(keepWeights = false): void {
    this.backprop.release();
    for (const g of this.grads) this.model.arena.free(g);
    if (!keepWeights) freeWeights(this.weights, this.model.arena);
  }
}

/** Row-major [rows × cols] copy of a parameter's weights (for saving and tests). */
export function paramRowMajor(p: FullParam): Float32Array {
  if (!p.packed) return Float32Array.from(p.data);
  const out = new Float32Array(p.rows * p.cols);
  for (let r = 0; r < p.rows; r++) {
    const base = (r >> 3) * p.cols * 8 + (r & 7);
    for (let k = 0; k < p.cols; k++) out[r * p.cols + k] = p.data[base + k * 8];
  }
  return out;
}
