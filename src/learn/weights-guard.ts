// The weights guard's verdicts: pure checks that decide whether an optimizer step produced weights
// fit to serve. Two checks, both against the last good weights:
// - the update itself: every parameter finite, and the update's norm bounded relative to the
//   weights' norm (a step that moves the adapter by more than its own size is a blow-up, whatever
//   the loss said);
// - a canary: log-probs of fixed everyday text under the new weights are finite, and their mean has
//   fallen by at most a bounded amount per token from the last good version's.
// The engine applies the first inside the optimizer step; the trainer loop applies the second
// before it publishes (see trainer/loop.ts).

export interface GuardLimits {
  /** largest ‖Δw‖ / max(‖w‖, floor) one optimizer step may make */
  maxUpdateRatio: number;
  /** ‖w‖ below this counts as this (a fresh LoRA adapter's B is zero) */
  normFloor: number;
  /** largest fall of the mean log-prob per canary token between consecutive published versions, in nats */
  maxCanaryDrop: number;
}

export const GUARD_DEFAULTS: GuardLimits = { maxUpdateRatio: 2, normFloor: 1, maxCanaryDrop: 4 };

/** What the engine measured around one update: sums of squares of the weights before and of the change. */
export interface UpdateStats {
  finite: boolean;
  /** ‖w‖² before the update */
  normSqBefore: number;
  /** ‖Δw‖² of the update */
  deltaNormSq: number;
}

/** null when the update may stand, else the reason it must be undone. */
export function updateVerdict(s: UpdateStats, limits: Pick<GuardLimits, 'maxUpdateRatio' | 'normFloor'> = GUARD_DEFAULTS): string | null {
  if (!s.finite || !Number.isFinite(s.deltaNormSq) || !Number.isFinite(s.normSqBefore)) return 'non-finite weights after the update';
  const ratio = Math.sqrt(s.deltaNormSq) / Math.max(Math.sqrt(s.normSqBefore), limits.normFloor);
  if (ratio > limits.maxUpdateRatio) {
    return `the update moved the weights by ${ratio.toPrecision(3)}× their norm (limit ${limits.maxUpdateRatio})`;
  }
  return null;
}

/** Accumulates UpdateStats over tensors: call add(before, after) per tensor. */
export function accumulateUpdate(s: UpdateStats, before: Float32Array, after: Float32Array): void {
  let nb = 0, nd = 0, finite = true;
  for (let i = 0; i < after.length; i++) {
    const a = after[i], b = before[i];
    if (!Number.isFinite(a)) { finite = false; continue; }
    nb += b * b;
    nd += (a - b) * (a - b);
  }
  s.finite &&= finite;
  s.normSqBefore += nb;
  s.deltaNormSq += nd;
}

/** The canary's mean log-prob per token over every text (NaN when there are no tokens). */
export function canaryMean(rows: ArrayLike<number>[]): number {
  let sum = 0, n = 0;
  for (const row of rows) for (let t = 0; t < row.length; t++) { sum += row[t]; n++; }
  return n ? sum / n : Number.NaN;
}

/**
 * How far below a uniform guess (nats per token) the canary may fall before the weights count as
 * broken. Generous on purpose: aggressive personalisation of a tiny model takes ordinary text to a
 * few nats below uniform, while saturated logits put it tens of nats below.
 */
export const UNIFORM_MARGIN = 5;

/**
 * Canary verdict: `next` and `last` are per-prompt log-probs of the same canary tokens under the new
 * and the last good weights; `vocabSize` sets the uniform guess's level, −ln V per token. `reason` is
 * null when the new weights may be published. Learning moves probability toward what users want and
 * away from ordinary text, sometimes fast on a tiny model; broken weights make ordinary text less
 * likely than a uniform guess (saturated logits). So a version is refused when its mean log-prob per
 * token is non-finite, or falls to more than UNIFORM_MARGIN below the uniform level, or falls by more
 * than `maxDrop` nats in one step.
 */
export function canaryVerdict(next: ArrayLike<number>[], last: ArrayLike<number>[] | null, vocabSize: number, maxDrop = GUARD_DEFAULTS.maxCanaryDrop): { reason: string | null; mean: number; drop: number } {
  for (let p = 0; p < next.length; p++) {
    for (let t = 0; t < next[p].length; t++) {
      const x = next[p][t];
      if (!Number.isFinite(x) || x > 1e-6) return { reason: `canary log-prob ${x} at text ${p}, token ${t} is not a finite log-probability`, mean: NaN, drop: NaN };
    }
  }
  const mean = canaryMean(next);
  if (Number.isNaN(mean)) return { reason: null, mean: 0, drop: 0 };
  const drop = last ? canaryMean(last) - mean : 0;
  const uniform = -Math.log(vocabSize);
  if (drop > 0 && mean < uniform - UNIFORM_MARGIN) {
    return { reason: `canary log-probs fell to ${mean.toFixed(2)} nats per token, well below a uniform guess (${uniform.toFixed(2)})`, mean, drop };
  }
  if (drop > maxDrop) return { reason: `canary log-probs fell by ${drop.toFixed(2)} nats per token in one step (limit ${maxDrop})`, mean, drop };
  return { reason: null, mean, drop };
}

/** Bounds of a learning rate the trainer accepts (Adam-style optimizers move each weight by about lr per step). */
export const MAX_LEARNING_RATE = 0.1;

/** null when `lr` is a usable learning rate, else why not. */
export function learningRateProblem(lr: number): string | null {
  if (typeof lr !== 'number' || !Number.isFinite(lr) || lr <= 0) return `the learning rate must be a positive finite number (got ${lr})`;
  if (lr > MAX_LEARNING_RATE) return `the learning rate ${lr} is above ${MAX_LEARNING_RATE}: an optimizer step that large destroys the weights (typical LoRA rates are 1e-4 to 1e-2)`;
  return null;
}
