// Training on samples drawn by older weights versions, without dropping them. Pure functions.
//
// A sample carries the exact log-probs its behaviour policy μ (the version that served it) gave
// its tokens. By the time it is trained the weights have moved on: the current weights π_prox are
// what the step updates. Decoupled PPO (as in batch-size-invariant PPO / asynchronous RL trainers)
// takes the clipped ratio against π_prox — a trust region around the weights being changed — and
// corrects for having sampled from μ with the importance weight π_prox/μ, truncated so that one
// token can never dominate the batch:
//
//   loss_t = −w_t · min(r_t·A_t, clip(r_t, 1−εl, 1+εh)·A_t),  r_t = π_θ/π_prox,  w_t = min(π_prox/μ, cap)
//
// w_t ≥ 0 and does not depend on θ, so this is exactly the ordinary PPO token loss with advantage
// w_t·A_t and "old" log-probs π_prox — what the engine already computes. For a fresh sample
// (sampled by the current version) π_prox = μ, w = 1, and nothing changes.

export interface StaleSample {
  /** per-token advantages as built for the sample (baseline already applied) */
  advantages: readonly number[];
  /** log-probs the tokens were sampled with (μ) */
  behaviour: readonly number[];
  /** log-probs of the same tokens under the current weights, at the sampling temperature (π_prox) */
  proximal: readonly number[];
}

export interface Corrected {
  /** w_t·A_t */
  advantages: number[];
  /** the log-probs the PPO ratio is taken against: π_prox */
  oldLogprobs: number[];
  /** w_t per token */
  weights: number[];
  /** tokens whose weight hit the cap */
  truncated: number;
}

/** Default cap on the per-token importance weight π_prox/μ. */
export const IMPORTANCE_CAP = 2;

/**
 * How a stale sample's distillation term is trained: as a fresh one's, weighted by prefixWeights, or moved onto the
 * current weights' answer to the same prompt (refresh; trainer/current-answers.ts).
 */
export const STALE_DISTILL_MODES = ['full', 'prefix', 'refresh'] as const;
export type StaleDistill = (typeof STALE_DISTILL_MODES)[number];

/** The truncated importance weight of one token: min(exp(proximal − behaviour), cap). */
export function importanceWeight(proximal: number, behaviour: number, cap = IMPORTANCE_CAP): number {
  const w = Math.exp(proximal - behaviour);
  return Number.isFinite(w) ? Math.min(w, cap) : cap;
}

/** Decoupled-PPO correction of one sample (see the file's opening comment). */
export function correctStaleness(s: StaleSample, cap = IMPORTANCE_CAP): Corrected {
  const n = s.advantages.length;
  if (s.behaviour.length !== n || s.proximal.length !== n) {
    throw new RangeError(`advantages (${n}), behaviour (${s.behaviour.length}) and proximal (${s.proximal.length}) log-probs differ in length`);
  }
  if (!(cap >= 1)) throw new RangeError(`the importance-weight cap must be at least 1, got ${cap}`);
  const weights = s.proximal.map((p, i) => importanceWeight(p, s.behaviour[i], cap));
  return {
    advantages: s.advantages.map((a, i) => a * weights[i]),
    oldLogprobs: [...s.proximal],
    weights,
    truncated: weights.filter((w) => w >= cap).length,
  };
}

/**
 * Per-position weights for the distillation term of a sample drawn by an older version. The top-K
 * distillation at position t compares the teacher and the current student at the context y<t, and that
 * context was written by the behaviour policy μ: a context the current weights would no longer write
 * teaches them how to continue text they do not produce. The weight is the context's likelihood ratio,
 *
 *   ρ_t = min(cap, Π_{s<t} π_prox(y_s)/μ(y_s)),   ρ_0 = 1 (the prompt is shared),
 *
 * truncated at 1 by default so a stale context can only count less than a fresh one, never more.
 */
export function prefixWeights(behaviour: readonly number[], proximal: readonly number[], cap = 1): number[] {
  if (behaviour.length !== proximal.length) throw new RangeError(`behaviour (${behaviour.length}) and proximal (${proximal.length}) log-probs differ in length`);
  const out: number[] = [];
  let logRatio = 0;
  for (let t = 0; t < behaviour.length; t++) {
    out.push(Math.min(cap, Math.exp(logRatio)));
    const d = proximal[t] - behaviour[t];
    logRatio += Number.isFinite(d) ? d : d > 0 ? 0 : -Infinity;
  }
  return out;
}

/**
 * Cumulative counts of staleness values (versions between sampling and training) at or below each
 * bucket's upper bound, the last bucket being +Inf — the shape of a Prometheus histogram.
 */
export function cumulativeBuckets(values: readonly number[], bounds: readonly number[]): number[] {
  return [...bounds, Infinity].map((b) => values.filter((v) => v <= b).length);
}

/** Bucket bounds for staleness in versions. */
export const STALENESS_BUCKETS = [0, 1, 2, 4, 8, 16, 32, 64];
