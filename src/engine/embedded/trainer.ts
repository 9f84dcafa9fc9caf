// LoRA training on the embedded engine, shaped like the Tinker primitives:
// forwardBackward(data, loss) accumulates gradients (summed over tokens) until optimStep(adam)
// divides them by the number of loss tokens, clips, and updates the trainable adapter.
import type { Transformer } from './model.ts';
import { LoraAdapter, validateLoraConfig, type LoraConfig } from './lora.ts';
import { Backprop } from './backward.ts';
import { AdamW, gradNorm } from './optimizer.ts';
import { rmsnormBackward } from './ops/rmsnorm.ts';
import { scoreResponses, scoreHidden, fedTokens, type ResponseRequest } from './score.ts';
import { TrainerCore, WASM_MEMORY_BYTES, type TokenTerm, type DenseTermsOf } from './trainer-core.ts';
import { accumulateUpdate, updateVerdict, GUARD_DEFAULTS, type GuardLimits } from '../../learn/weights-guard.ts';
import { EngineError, type Datum, type OptimStepMetrics, type AdamParams } from '../types.ts';

export { TAPE_BUDGET_BYTES } from './trainer-core.ts';

export class LoraTrainer extends TrainerCore {
  readonly adapter: LoraAdapter;
  readonly grads: LoraAdapter;
  readonly optimizer: AdamW;
  /** limits of the weights guard (see learn/weights-guard.ts) */
  guard: Pick<GuardLimits, 'maxUpdateRatio' | 'normFloor'> = GUARD_DEFAULTS;
  private backup: { params: Float32Array[]; m: Float32Array[]; v: Float32Array[]; step: number } | null = null;
  private readonly backprop: Backprop;

  constructor(model: Transformer, config: Partial<LoraConfig> = {}, adapter?: LoraAdapter) {
    super(model);
    const cfg = validateLoraConfig(config);
    this.adapter = adapter ?? LoraAdapter.create(model.cfg, cfg, model.arena, 'peft');
    this.grads = LoraAdapter.create(model.cfg, this.adapter.config, model.arena, 'zeros');
    this.optimizer = new AdamW(this.adapter);
    this.backprop = new Backprop(model, this.adapter, this.grads);
  }

  /** Log-probs of each response token under `adapter` (null = base), by the same arithmetic as the loss. */
  logprobs(data: ResponseRequest[], adapter: LoraAdapter | null, temperature = 1): Float32Array[] {
    return scoreResponses(this.model, data, adapter, temperature);
  }

  /** Parameters trained (the adapter's). */
  get parameterCount(): number { return this.adapter.parameterCount; }

  protected baseLogprobs(data: Datum[], temperature: number): Float32Array[] { return this.logprobs(data, null, temperature); }

  protected baseHidden(data: Datum[]): Float32Array[] { return scoreHidden(this.model, data, null); }

  protected pendingGradNorm(): number { return gradNorm(this.grads, 1 / Math.max(this.pendingTokens, 1)); }

  /** One packed forward + loss + backward over `group`, adding into the gradients. */
  protected step(group: Datum[], term: TokenTerm, temperatureOf: (d: Datum) => number, dense: DenseTermsOf | null): void {
    const { model } = this;
    const { arena, cfg } = model;
    const H = cfg.hiddenSize, L = cfg.numLayers;
    const items = group.map((d) => ({ tokens: fedTokens(d), cache: model.newCache(), adapter: this.adapter }));
    const R = items.reduce((a, it) => a + it.tokens.length, 0);
    const checkpoints = Array.from({ length: L + 1 }, () => arena.alloc(R * H, false));
    const dx = arena.alloc(R * H);
    const dK: Float32Array[] = [], dV: Float32Array[] = [];
    const { rank, targets } = this.adapter.config;
    const tapeBytes = R * L * model.tapeFloatsPerRow(rank, targets.length) * 4;
    const keepTapes = tapeBytes <= Math.min(this.tapeBudgetBytes, WASM_MEMORY_BYTES - arena.usedBytes - 512 * 2 ** 20);
    const tapes = keepTapes ? Array.from({ length: L }, () => model.allocTape(R, rank, targets)) : undefined;
    try {
      const { hidden, ctx } = model.forwardWithContext(items, checkpoints, tapes);
      // loss head: dx collects ∂L/∂(final hidden) on response rows
      let row = 0;
      group.forEach((d, k) => {
        this.head(hidden, row + d.promptIds.length - 1, d.responseIds, d.distill?.ids ?? null, temperatureOf(d), (t, logp, setLogp) => term(k, t, logp, setLogp), dx, model.weights.lmHead, null, dense?.(k) ?? null);
        row += items[k].tokens.length;
      });
      const dFinal = arena.alloc(R * H);
      rmsnormBackward(dFinal, dx, checkpoints[L], model.weights.finalNorm, R, H, cfg.rmsNormEps, false);
      dx.set(dFinal);
      arena.free(dFinal);
      // per-row views of per-sequence dK/dV blocks
      const blocks = items.map((it) => [arena.alloc(it.tokens.length * model.kvDim), arena.alloc(it.tokens.length * model.kvDim)]);
      items.forEach((it, k) => { for (let t = 0; t < it.tokens.length; t++) { dK.push(blocks[k][0]); dV.push(blocks[k][1]); } });
      for (let l = L - 1; l >= 0; l--) this.backprop.layer(l, checkpoints[l], ctx, dx, dK, dV, tapes?.[l] ?? null);
      for (const [a, b] of blocks) { arena.free(a); arena.free(b); }
    } finally {
      for (const c of checkpoints) arena.free(c);
      for (const t of tapes ?? []) model.freeTape(t);
      arena.free(dx);
      for (const it of items) it.cache.release();
    }
  }

  /**
   * Mean the accumulated gradients over their loss tokens, clip, and update. A step whose loss or
   * gradients are not finite is refused: the adapter is unchanged and the gradients are dropped. So is
   * a step whose result fails the weights guard (non-finite weights, or an update larger than the
   * weights themselves): the adapter, the optimizer moments and the step count are put back.
   */
  optimStep(p: AdamParams): OptimStepMetrics {
    if (!(Number.isFinite(p.learningRate) && p.learningRate >= 0)) throw new EngineError('bad_request', `learningRate must be a finite non-negative number (got ${p.learningRate})`);
    const tokens = this.pendingTokens;
    const scale = p.normalize === 'none' ? 1 : 1 / Math.max(tokens, 1);
    const norm = gradNorm(this.grads, scale);
    const reason = this.nonFinite ?? (Number.isFinite(norm) ? null : 'non-finite gradient norm');
    const clip = p.gradClipNorm ?? 1;
    let skipped = false;
    let why = reason;
    if (reason) skipped = true;
    else if (tokens > 0) {
      const factor = scale * (clip > 0 && norm > clip ? clip / norm : 1);
      for (const t of this.grads.tensors()) for (let i = 0; i < t.data.length; i++) t.data[i] *= factor;
      // the weights guard: keep the state before the update, and undo an update that broke the weights
      this.snapshot();
      this.optimizer.apply(this.adapter, this.grads, p);
      const stats = { finite: true, normSqBefore: 0, deltaNormSq: 0 };
      let k = 0;
      for (const t of this.adapter.tensors()) accumulateUpdate(stats, this.backup!.params[k++], t.data);
      why = updateVerdict(stats, this.guard);
      if (why) { this.restore(); skipped = true; }
    }
    this.grads.zero();
    this.pendingTokens = 0;
    this.nonFinite = null;
    return { step: this.optimizer.step, gradNorm: norm, skipped, reason: why ?? undefined, tokens, learningRate: p.learningRate };
  }

  /** Copy the adapter and the optimizer state aside (buffers reused from step to step). */
  private snapshot(): void {
    const params = [...this.adapter.tensors()].map((t) => t.data);
    this.backup ??= { params: params.map((d) => new Float32Array(d.length)), m: this.optimizer.m.map((d) => new Float32Array(d.length)), v: this.optimizer.v.map((d) => new Float32Array(d.length)), step: 0 };
    params.forEach((d, i) => this.backup!.params[i].set(d));
    this.optimizer.m.forEach((d, i) => this.backup!.m[i].set(d));
    this.optimizer.v.forEach((d, i) => this.backup!.v[i].set(d));
    this.backup.step = this.optimizer.step;
  }

  /** Put back what snapshot() saved: the step never happened. */
  private restore(): void {
    const b = this.backup!;
    let i = 0;
    for (const t of this.adapter.tensors()) t.data.set(b.params[i++]);
    this.optimizer.m.forEach((d, j) => d.set(b.m[j]));
    this.optimizer.v.forEach((d, j) => d.set(b.v[j]));
    this.optimizer.step = b.step;
  }

  /** Free what the trainer holds in the arena, its adapter included (versions hold clones of it, never it). */
  release(): void {
    this.backprop.release();
    this.grads.free();
    this.adapter.free();
  }
}

