// LoRA training on the embedded engine, shaped like the Tinker primitives:
// forwardBackward(data, loss) accumulates gradients (summed over tokens) until optimStep(adam)
// divides them by the number of loss tokens, clips, and updates the trainable adapter.
import type { Transformer } from './model.ts';
import { LoraAdapter, validateLoraConfig, type LoraConfig } from './lora.ts';
import { Backprop } from './backward.ts';
import { AdamW, gradNorm } from './optimizer.ts';
import { rmsnormBackward } from './ops/rmsnorm.ts';
import { scoreResponses, packRows, fedTokens, type ResponseRequest } from './score.ts';
import { ppoToken, k3Token, crossEntropyToken, PPO_DEFAULTS, type LossSpec } from '../../learn/losses.ts';
import { accumulateUpdate, updateVerdict, GUARD_DEFAULTS, type GuardLimits } from '../../learn/weights-guard.ts';
import { EngineError, checkTokenIds, type Datum, type ForwardBackwardMetrics, type OptimStepMetrics, type AdamParams } from '../types.ts';

/** Rows of logits held at once in the loss head ([rows × vocab] floats). */
const HEAD_ROWS = 128;
/**
 * Keep every layer's tape from the forward pass (no recompute in the backward pass: a third less
 * work) when they fit in this many bytes and in what the 4 GiB WebAssembly memory has left.
 */
export const TAPE_BUDGET_BYTES = 1.5 * 2 ** 30;
const WASM_MEMORY_BYTES = 4 * 2 ** 30;

export class LoraTrainer {
  readonly model: Transformer;
  readonly adapter: LoraAdapter;
  readonly grads: LoraAdapter;
  readonly optimizer: AdamW;
  /** loss tokens accumulated since the last optimizer step */
  pendingTokens = 0;
  /** see TAPE_BUDGET_BYTES; 0 forces recomputation in the backward pass */
  tapeBudgetBytes = TAPE_BUDGET_BYTES;
  private nonFinite: string | null = null;
  /** limits of the weights guard (see learn/weights-guard.ts) */
  guard: Pick<GuardLimits, 'maxUpdateRatio' | 'normFloor'> = GUARD_DEFAULTS;
  private backup: { params: Float32Array[]; m: Float32Array[]; v: Float32Array[]; step: number } | null = null;
  private readonly backprop: Backprop;

  constructor(model: Transformer, config: Partial<LoraConfig> = {}, adapter?: LoraAdapter) {
    this.model = model;
    const cfg = validateLoraConfig(config);
    this.adapter = adapter ?? LoraAdapter.create(model.cfg, cfg, model.arena, 'peft');
    this.grads = LoraAdapter.create(model.cfg, this.adapter.config, model.arena, 'zeros');
    this.optimizer = new AdamW(this.adapter);
    this.backprop = new Backprop(model, this.adapter, this.grads);
  }

  validate(d: Datum, spec: LossSpec): void {
    const n = d.responseIds.length, V = this.model.cfg.vocabSize;
    if (d.promptIds.length === 0) throw new EngineError('bad_request', 'a datum needs at least one prompt token');
    if (n === 0) throw new EngineError('bad_request', 'a datum needs at least one response token');
    if (d.promptIds.length + n - 1 > this.model.maxContext) throw new EngineError('context_length_exceeded', `a datum of ${d.promptIds.length + n} tokens exceeds the context of ${this.model.maxContext}`);
    checkTokenIds(d.promptIds, V);
    checkTokenIds(d.responseIds, V);
    const perToken = (name: keyof Datum, required: boolean) => {
      const v = d[name] as number[] | undefined;
      if (v === undefined) { if (required) throw new EngineError('bad_request', `the ${spec.kind} loss needs ${name} for every response token`); return; }
      if (v.length !== n) throw new EngineError('bad_request', `${name} has ${v.length} values for ${n} response tokens`);
    };
    perToken('advantages', spec.kind === 'ppo');
    perToken('behaviourLogprobs', spec.kind === 'ppo');
    perToken('lossMask', false);
    perToken('teacherLogprobs', false);
  }

  /** Log-probs of each response token under `adapter` (null = base), by the same arithmetic as the loss. */
  logprobs(data: ResponseRequest[], adapter: LoraAdapter | null, temperature = 1): Float32Array[] {
    return scoreResponses(this.model, data, adapter, temperature);
  }

  /**
   * Loss head over the response rows [first, first + n) of `hidden`, HEAD_ROWS rows at a time (no
   * [tokens × vocab] matrix is ever held). `term(t, logp)` returns ∂loss/∂logp of token t; the
   * gradient with respect to those hidden rows is added into `dHidden`.
   */
  private head(hidden: Float32Array, first: number, targets: number[], temperature: number, term: (t: number, logp: number) => number, dHidden: Float32Array): void {
    const { cfg, arena, kernel } = this.model;
    const H = cfg.hiddenSize, V = cfg.vocabSize, invT = 1 / temperature;
    const logits = arena.alloc(HEAD_ROWS * V), lse = arena.alloc(HEAD_ROWS), coef = arena.alloc(HEAD_ROWS);
    try {
      for (let t0 = 0; t0 < targets.length; t0 += HEAD_ROWS) {
        const rows = Math.min(HEAD_ROWS, targets.length - t0);
        this.model.logits(logits, hidden.subarray((first + t0) * H, (first + t0 + rows) * H), rows);
        kernel.rowsLogSumExp(logits, rows, V, invT, lse);
        let anyGrad = false;
        for (let i = 0; i < rows; i++) {
          const g = term(t0 + i, logits[i * V + targets[t0 + i]] * invT - lse[i]);
          coef[i] = g * invT;
          if (g !== 0) anyGrad = true;
        }
        if (!anyGrad) continue;
        // dlogits = (g/T)·(onehot − softmax(x/T)), then the hidden rows' gradient dlogits·E
        kernel.rowsSoftmaxGrad(logits, rows, V, invT, lse, coef);
        for (let i = 0; i < rows; i++) logits[i * V + targets[t0 + i]] += coef[i];
        kernel.matmulPackedT(dHidden.subarray((first + t0) * H), logits, this.model.weights.lmHead, rows, { accumulate: true });
      }
    } finally {
      arena.free(logits); arena.free(lse); arena.free(coef);
    }
  }

  forwardBackward(data: Datum[], spec: LossSpec): ForwardBackwardMetrics {
    const steps = this.forwardBackwardSteps(data, spec);
    for (;;) { const r = steps.next(); if (r.done) return r.value; }
  }

  /**
   * forwardBackward one packed group at a time: the generator yields between groups so a caller
   * can serve requests in between; its return value is the call's metrics.
   */
  *forwardBackwardSteps(data: Datum[], spec: LossSpec): Generator<void, ForwardBackwardMetrics> {
    if (data.length === 0) throw new EngineError('bad_request', 'forwardBackward needs at least one datum');
    for (const d of data) this.validate(d, spec);
    const temperatureOf = (d: Datum) => d.temperature ?? spec.temperature ?? 1;
    const ppo = spec.kind === 'ppo' ? { ...PPO_DEFAULTS, ...spec } : null;
    const base = ppo && ppo.klCoef > 0 ? data.map((d) => this.logprobs([d], null, temperatureOf(d))[0]) : null;
    const metrics = { loss: 0, tokens: 0, clipped: 0, ratio: 0, kl: 0, gap: 0, gapTokens: 0 };
    const logprobs: number[][] = [];
    let index = 0;
    for (const group of packRows(data)) {
      const first = index;
      index += group.length;
      this.step(group, (k, t, logp) => {
        const d = group[k], mask = d.lossMask?.[t] ?? 1;
        (logprobs[first + k] ??= [])[t] = logp;
        if (mask === 0) return 0;
        let loss: number, dlogp: number;
        if (ppo) {
          const term = ppoToken(logp, d.behaviourLogprobs![t], d.advantages![t], ppo.clipLow, ppo.clipHigh);
          loss = term.loss; dlogp = term.dlogp;
          metrics.ratio += term.ratio;
          if (term.clipped) metrics.clipped++;
          if (base) {
            const kl = k3Token(logp, base[first + k][t]);
            loss += ppo.klCoef * kl.kl; dlogp += ppo.klCoef * kl.dlogp;
            metrics.kl += kl.kl;
          }
          if (d.teacherLogprobs) { metrics.gap += Math.abs(d.teacherLogprobs[t] - d.behaviourLogprobs![t]); metrics.gapTokens++; }
        } else {
          ({ loss, dlogp } = crossEntropyToken(logp));
        }
        if (!Number.isFinite(loss) || !Number.isFinite(dlogp)) this.nonFinite ??= `non-finite loss at datum ${first + k}, token ${t}`;
        metrics.loss += loss * mask;
        metrics.tokens += mask;
        return dlogp * mask;
      }, temperatureOf);
      if (index < data.length) yield;
    }
    this.pendingTokens += metrics.tokens;
    const n = Math.max(metrics.tokens, 1e-12);
    return {
      loss: metrics.loss / n, tokens: metrics.tokens,
      clipFraction: ppo ? metrics.clipped / n : 0, meanRatio: ppo ? metrics.ratio / n : 1,
      kl: base ? metrics.kl / n : null, teacherBehaviourGap: metrics.gapTokens > 0 ? metrics.gap / metrics.gapTokens : null,
      logprobs, gradNorm: gradNorm(this.grads, 1 / Math.max(this.pendingTokens, 1)),
    };
  }

  /** One packed forward + loss + backward over `group`, adding into the gradients. */
  private step(group: Datum[], term: (datum: number, t: number, logp: number) => number, temperatureOf: (d: Datum) => number): void {
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
        this.head(hidden, row + d.promptIds.length - 1, d.responseIds, temperatureOf(d), (t, logp) => term(k, t, logp), dx);
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

  release(): void {
    this.backprop.release();
    this.grads.free();
  }
}

