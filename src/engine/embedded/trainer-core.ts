// What LoRA and full-parameter training share: datum validation, the loss head (log-softmax over
// chunks of rows, never a [tokens × vocab] matrix), and forwardBackward's per-token loss terms
// (PPO with an optional KL term, or cross-entropy) and the terms over whole distributions (the exact KL,
// the entropy guard), with token-level aggregation. A subclass supplies the packed forward + backward of
// one group of sequences, the base's hidden states, and the norm of its accumulated gradients.
import type { Transformer } from './model.ts';
import type { PackedMatrix } from './kernels/packed.ts';
import { packRows } from './score.ts';
import { ppoToken, unlikelihoodToken, k3Token, klToken, fullKlRow, entropyExcessRow, crossEntropyToken, PPO_DEFAULTS, type LossSpec } from '../../learn/losses.ts';
import { topkToken } from '../../learn/topk-opd.ts';
import { EngineError, checkTokenIds, type Datum, type ForwardBackwardMetrics } from '../types.ts';

/** Rows of logits held at once in the loss head ([rows × vocab] floats). */
const HEAD_ROWS = 128;
/**
 * Keep every layer's tape from the forward pass (no recompute in the backward pass: a third less
 * work) when they fit in this many bytes and in what the 4 GiB WebAssembly memory has left.
 */
export const TAPE_BUDGET_BYTES = 1.5 * 2 ** 30;
export const WASM_MEMORY_BYTES = 4 * 2 ** 30;

/** ∂loss/∂logp of a response token, and of each id of its distillation set (null when it has none). */
export interface TokenGrad { dlogp: number; dSet: number[] | null }
/** The loss term of response token t of datum k, given its log-prob and those of its distillation set. */
export type TokenTerm = (datum: number, t: number, logp: number, setLogp: number[] | null) => TokenGrad;
/** A head's view of one datum's term: token t's log-prob and its set's log-probs → gradients. */
export type RowTerm = (t: number, logp: number, setLogp: number[] | null) => TokenGrad;
/**
 * The terms that compare whole distributions with the base's on one datum's response rows
 * (learn/losses.ts): the exact KL term's coefficient at token t (β × loss mask) and the entropy guard's
 * (λ × loss mask; both 0 skips the row), the base model's final hidden states at the response positions
 * ([tokens × hidden]; the head rebuilds the base's logits from them with the base LM head), and where
 * each row's KL and entropy excess are reported.
 */
export interface DenseTerms { klCoef(t: number): number; entropyCoef(t: number): number; baseHidden: Float32Array; report(t: number, kl: number, entropyExcess: number): void }
/** The whole-distribution terms of datum k of a group, or null where it has none. */
export type DenseTermsOf = (datum: number) => DenseTerms | null;

export abstract class TrainerCore {
  readonly model: Transformer;
  /** loss tokens accumulated since the last optimizer step */
  pendingTokens = 0;
  /** see TAPE_BUDGET_BYTES; 0 forces recomputation in the backward pass */
  tapeBudgetBytes = TAPE_BUDGET_BYTES;
  protected nonFinite: string | null = null;

  constructor(model: Transformer) { this.model = model; }

  /** One packed forward + loss + backward over `group`, adding into the gradients. */
  protected abstract step(group: Datum[], term: TokenTerm, temperatureOf: (d: Datum) => number, dense: DenseTermsOf | null): void;
  /** Log-probs of the data's responses under the base model (the KL term's reference), packed into shared passes. */
  protected abstract baseLogprobs(data: Datum[], temperature: number): Float32Array[];
  /** The base model's final hidden states at each response position ([tokens × hidden] per datum; the whole-distribution terms' reference). */
  protected abstract baseHidden(data: Datum[]): Float32Array[];
  /**
   * Where the engine scores the base model itself (through its prefix cache, where the prompts'
   * base-weight KV is kept across steps: the same bits, fewer rows); null: `baseLogprobs`.
   */
  baseScorer: ((data: Datum[], temperature: number) => Float32Array[]) | null = null;

  /** The KL term's base log-probs of every datum, one scoring per sampling temperature. */
  private baseLogprobsOf(data: Datum[], temperatureOf: (d: Datum) => number): Float32Array[] {
    const out: Float32Array[] = new Array(data.length);
    const byTemperature = new Map<number, number[]>();
    data.forEach((d, i) => {
      const T = temperatureOf(d);
      const at = byTemperature.get(T);
      if (at) at.push(i); else byTemperature.set(T, [i]);
    });
    for (const [T, at] of byTemperature) {
      const group = at.map((i) => data[i]);
      const lp = this.baseScorer ? this.baseScorer(group, T) : this.baseLogprobs(group, T);
      at.forEach((i, k) => { out[i] = lp[k]; });
    }
    return out;
  }
  /** Norm of the accumulated gradients divided by the pending token count (what optimStep would clip). */
  protected abstract pendingGradNorm(): number;

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
    perToken('unlikelihood', false);
    if (d.unlikelihood) {
      if (spec.kind !== 'ppo') throw new EngineError('bad_request', 'unlikelihood weights need the ppo loss');
      if (!d.unlikelihood.every((w) => Number.isFinite(w) && w >= 0)) throw new EngineError('bad_request', 'unlikelihood weights must be finite numbers ≥ 0');
    }
    if (d.klScale !== undefined && !(Number.isFinite(d.klScale) && d.klScale >= 0)) throw new EngineError('bad_request', `klScale must be a finite number ≥ 0 (got ${d.klScale})`);
    if (d.distill) {
      if (spec.kind !== 'ppo') throw new EngineError('bad_request', 'distill sets need the ppo loss');
      const { ids, oldLogprobs, advantages } = d.distill;
      for (const [name, v] of [['ids', ids], ['oldLogprobs', oldLogprobs], ['advantages', advantages]] as const) {
        if (!Array.isArray(v) || v.length !== n) throw new EngineError('bad_request', `distill.${name} has ${Array.isArray(v) ? v.length : 'no'} entries for ${n} response tokens`);
      }
      for (let t = 0; t < n; t++) {
        const k = ids[t].length;
        if (oldLogprobs[t].length !== k || advantages[t].length !== k) throw new EngineError('bad_request', `distill sets of token ${t} differ in size (${k} ids, ${oldLogprobs[t].length} log-probs, ${advantages[t].length} advantages)`);
        checkTokenIds(ids[t], V, 'distill id');
      }
    }
  }

  /**
   * Loss head over the response rows [first, first + n) of `hidden`, HEAD_ROWS rows at a time (no
   * [tokens × vocab] matrix is ever held). `term(t, logp, setLogp)` returns ∂loss/∂logp of token t
   * and of the ids `sets[t]` (top-K distillation); the gradient with respect to those hidden rows is
   * added into `dHidden`, and with `dHead` (row-major [vocab × hidden]) the gradient of the LM head
   * weights too.
   */
  protected head(hidden: Float32Array, first: number, targets: number[], sets: number[][] | null, temperature: number, term: RowTerm,
    dHidden: Float32Array, lmHead: PackedMatrix, dHead: Float32Array | null = null, dense: DenseTerms | null = null): void {
    const { cfg, arena, kernel } = this.model;
    const H = cfg.hiddenSize, V = cfg.vocabSize, invT = 1 / temperature;
    const logits = arena.alloc(HEAD_ROWS * V), lse = arena.alloc(HEAD_ROWS), coef = arena.alloc(HEAD_ROWS);
    // the whole-distribution terms (exact KL, entropy guard): the base's logits of the same rows (from its
    // hidden states and LM head), and the terms' gradient in the policy's logits, added after the softmax gradient
    const baseRows = dense ? arena.alloc(HEAD_ROWS * H) : null, baseLogits = dense ? arena.alloc(HEAD_ROWS * V) : null, baseLse = dense ? arena.alloc(HEAD_ROWS) : null;
    const scratch = dense ? this.denseScratch(V) : null;
    const denseGrad = scratch?.grad ?? null, rowLogp = scratch?.logp ?? null, rowBase = scratch?.base ?? null;
    const rowGrad = scratch?.klGrad ?? null, rowEntropyGrad = scratch?.entropyGrad ?? null;
    try {
      for (let t0 = 0; t0 < targets.length; t0 += HEAD_ROWS) {
        const rows = Math.min(HEAD_ROWS, targets.length - t0);
        const rowsHidden = hidden.subarray((first + t0) * H, (first + t0 + rows) * H);
        kernel.matmulPacked(logits, rowsHidden, lmHead, rows);
        kernel.rowsLogSumExp(logits, rows, V, invT, lse);
        if (dense) {
          baseRows!.set(dense.baseHidden.subarray(t0 * H, (t0 + rows) * H));
          this.model.logits(baseLogits!, baseRows!, rows);
          kernel.rowsLogSumExp(baseLogits!, rows, V, invT, baseLse!);
        }
        let anyGrad = false;
        const grads: TokenGrad[] = new Array(rows);
        for (let i = 0; i < rows; i++) {
          const set = sets ? sets[t0 + i] : null;
          const setLogp = set ? set.map((id) => logits[i * V + id] * invT - lse[i]) : null;
          const g = term(t0 + i, logits[i * V + targets[t0 + i]] * invT - lse[i], setLogp);
          grads[i] = g;
          let total = g.dlogp;
          if (g.dSet) for (const x of g.dSet) total += x;
          coef[i] = total * invT;
          if (g.dlogp !== 0 || (g.dSet && g.dSet.some((x) => x !== 0))) anyGrad = true;
          if (dense) {
            const c = dense.klCoef(t0 + i), ce = dense.entropyCoef(t0 + i), o = i * V;
            if (c === 0 && ce === 0) { denseGrad!.fill(0, o, o + V); continue; }
            for (let v = 0; v < V; v++) { rowLogp![v] = logits[o + v] * invT - lse[i]; rowBase![v] = baseLogits![o + v] * invT - baseLse![i]; }
            // each term only where it is on (a guard beside k2 needs no exact KL, an exact KL without the guard no entropies)
            const kl = c !== 0 ? fullKlRow(rowLogp!, rowBase!, rowGrad!) : 0;
            const excess = ce !== 0 ? entropyExcessRow(rowLogp!, rowBase!, rowEntropyGrad!) : 0;
            dense.report(t0 + i, kl, excess);
            for (let v = 0; v < V; v++) denseGrad![o + v] = invT * ((c !== 0 ? c * rowGrad![v] : 0) + (ce !== 0 ? ce * rowEntropyGrad![v] : 0));
            anyGrad = true;
          }
        }
        if (!anyGrad) continue;
        // dlogits = Σ_j (g_j/T)·(onehot_j − softmax(x/T)) over the target and the set ids, then the
        // hidden rows' gradient dlogits·E
        kernel.rowsSoftmaxGrad(logits, rows, V, invT, lse, coef);
        for (let i = 0; i < rows; i++) {
          logits[i * V + targets[t0 + i]] += grads[i].dlogp * invT;
          const set = sets?.[t0 + i], dSet = grads[i].dSet;
          if (set && dSet) for (let j = 0; j < set.length; j++) logits[i * V + set[j]] += dSet[j] * invT;
          if (denseGrad) for (let v = i * V; v < (i + 1) * V; v++) logits[v] += denseGrad[v];
        }
        kernel.matmulPackedT(dHidden.subarray((first + t0) * H), logits, lmHead, rows, { accumulate: true });
        if (dHead) kernel.matmulTN(dHead, logits, rowsHidden, V, H, rows, { accumulate: true });
      }
    } finally {
      arena.free(logits); arena.free(lse); arena.free(coef);
      if (baseRows) { arena.free(baseRows); arena.free(baseLogits!); arena.free(baseLse!); }
    }
  }

  private scratch: { grad: Float32Array; logp: Float32Array; base: Float32Array; klGrad: Float32Array; entropyGrad: Float32Array } | null = null;
  /** the head's buffers for the whole-distribution terms, kept across calls ([HEAD_ROWS × vocab] is ~78 MB at a 152K vocabulary) */
  private denseScratch(V: number) {
    if (this.scratch?.logp.length !== V) {
      this.scratch = { grad: new Float32Array(HEAD_ROWS * V), logp: new Float32Array(V), base: new Float32Array(V), klGrad: new Float32Array(V), entropyGrad: new Float32Array(V) };
    }
    return this.scratch;
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
    const fullKl = ppo !== null && ppo.klCoef > 0 && ppo.klEstimator === 'full';
    const base = ppo && ppo.klCoef > 0 && !fullKl ? this.baseLogprobsOf(data, temperatureOf) : null;
    const entropyGuard = ppo ? ppo.entropyGuard : 0;
    if (!(Number.isFinite(entropyGuard) && entropyGuard >= 0)) throw new EngineError('bad_request', `entropyGuard must be a finite number ≥ 0 (got ${entropyGuard})`);
    const baseHidden = fullKl || entropyGuard > 0 ? this.baseHidden(data) : null;
    const metrics = { loss: 0, tokens: 0, clipped: 0, ratio: 0, kl: 0, entropyExcess: 0, gap: 0, gapTokens: 0, setLoss: 0, setTokens: 0, setClipped: 0, setEntries: 0 };
    const logprobs: number[][] = [];
    let index = 0;
    for (const group of packRows(data)) {
      const first = index;
      index += group.length;
      const dense: DenseTermsOf | null = baseHidden ? (k) => {
        const d = group[k], beta = fullKl ? ppo!.klCoef * (d.klScale ?? 1) : 0;
        return {
          klCoef: (t) => beta * (d.lossMask?.[t] ?? 1),
          entropyCoef: (t) => entropyGuard * (d.lossMask?.[t] ?? 1),
          baseHidden: baseHidden[first + k],
          report: (t, kl, excess) => {
            const m = d.lossMask?.[t] ?? 1;
            if (fullKl) { metrics.kl += kl * m; metrics.loss += beta * kl * m; }
            metrics.loss += entropyGuard * excess * m; metrics.entropyExcess += excess * m;
          },
        };
      } : null;
      this.step(group, (k, t, logp, setLogp) => {
        const d = group[k], mask = d.lossMask?.[t] ?? 1;
        (logprobs[first + k] ??= [])[t] = logp;
        if (mask === 0) return { dlogp: 0, dSet: null };
        let loss: number, dlogp: number, dSet: number[] | null = null;
        if (ppo) {
          const term = ppoToken(logp, d.behaviourLogprobs![t], d.advantages![t], ppo.clipLow, ppo.clipHigh);
          loss = term.loss; dlogp = term.dlogp;
          metrics.ratio += term.ratio;
          if (term.clipped) metrics.clipped++;
          if (base) {
            // the reported KL is k3's value whatever the gradient's estimator: an unbiased estimate of KL(π‖π_base)
            const baseLogp = base[first + k][t], k3 = k3Token(logp, baseLogp);
            const term = ppo.klEstimator === 'k2' ? klToken('k2', logp, baseLogp) : k3;
            const beta = ppo.klCoef * (d.klScale ?? 1);
            loss += beta * term.kl; dlogp += beta * term.dlogp;
            metrics.kl += k3.kl;
          }
          const ul = d.unlikelihood?.[t] ?? 0;
          if (ul > 0) { const u = unlikelihoodToken(logp); loss += ul * u.loss; dlogp += ul * u.dlogp; }
          if (d.teacherLogprobs) { metrics.gap += Math.abs(d.teacherLogprobs[t] - d.behaviourLogprobs![t]); metrics.gapTokens++; }
          if (d.distill && setLogp) {
            const set = topkToken(setLogp, d.distill.oldLogprobs[t], d.distill.advantages[t], ppo.clipLow, ppo.clipHigh);
            loss += set.loss;
            dSet = set.dlogp.map((x) => x * mask);
            metrics.setLoss += set.loss * mask; metrics.setTokens += mask; metrics.setClipped += set.clipped; metrics.setEntries += setLogp.length;
            if (!set.dlogp.every(Number.isFinite)) this.nonFinite ??= `non-finite distillation gradient at datum ${first + k}, token ${t}`;
          }
        } else {
          ({ loss, dlogp } = crossEntropyToken(logp));
        }
        if (!Number.isFinite(loss) || !Number.isFinite(dlogp)) this.nonFinite ??= `non-finite loss at datum ${first + k}, token ${t}`;
        metrics.loss += loss * mask;
        metrics.tokens += mask;
        return { dlogp: dlogp * mask, dSet };
      }, temperatureOf, dense);
      if (index < data.length) yield;
    }
    this.pendingTokens += metrics.tokens;
    const n = Math.max(metrics.tokens, 1e-12);
    return {
      loss: metrics.loss / n, tokens: metrics.tokens,
      clipFraction: ppo ? metrics.clipped / n : 0, meanRatio: ppo ? metrics.ratio / n : 1,
      kl: base || fullKl ? metrics.kl / n : null, ...(entropyGuard > 0 ? { entropyExcess: metrics.entropyExcess / n } : {}), teacherBehaviourGap: metrics.gapTokens > 0 ? metrics.gap / metrics.gapTokens : null,
      logprobs, gradNorm: this.pendingGradNorm(),
      ...(metrics.setTokens > 0 ? { distill: { loss: metrics.setLoss / metrics.setTokens, tokens: metrics.setTokens, clipFraction: metrics.setClipped / Math.max(1, metrics.setEntries) } } : {}),
    };
  }
}
