// The likelihood guard, as pure math: an answer the base model finds less likely than nearly all of its own answers
// to the same traffic is never reinforced, whatever the judge said. A user who asked for trees may approve of
// "Once upon a time, there was a tree. The tuna waller was very fun" — it names the tree — and every such approval
// teaches the policy that the misspelt path to the topic pays. The KL term and the entropy guard pull the whole
// distribution back towards the base, but not against a reward that keeps paying for the broken answer; the loop
// guard (learn/loops.ts) catches the answers that repeat themselves, this one the answers that fall apart.
//
// The floor is the base's own: the p-quantile of the base model's mean per-token log-likelihood on answers it
// sampled itself for the first requests the trainer saw (the evaluation's fluency band, learn/fluency.ts, is the
// same quantile on held-out requests). No floor until enough of them were seen: the guard then lets every answer by.
import { percentile } from './fluency.ts';

export interface LikelihoodFloorOptions {
  /** the quantile of the base's own answers' mean log-likelihoods below which an answer is unlikely */
  percentile: number;
  /** base answers needed before the floor applies */
  minSamples: number;
  /** base answers after which calibration stops (the floor is then fixed) */
  maxSamples: number;
}

export const LIKELIHOOD_FLOOR_DEFAULTS: Readonly<LikelihoodFloorOptions> = Object.freeze({ percentile: 0.05, minSamples: 24, maxSamples: 64 });

/** The floor, calibrated as base answers come in. */
export class LikelihoodFloor {
  private readonly means: number[] = [];
  private cached: number | null = null;
  readonly o: LikelihoodFloorOptions;
  constructor(o: LikelihoodFloorOptions = LIKELIHOOD_FLOOR_DEFAULTS) {
    this.o = o;
    if (!(o.percentile >= 0 && o.percentile <= 1)) throw new RangeError(`the likelihood floor's percentile must be in [0, 1], got ${o.percentile}`);
    if (!(o.minSamples >= 1 && o.maxSamples >= o.minSamples)) throw new RangeError(`the likelihood floor needs 1 ≤ minSamples ≤ maxSamples, got ${o.minSamples}, ${o.maxSamples}`);
  }

  /** Whether more base answers are wanted. */
  get calibrating(): boolean { return this.means.length < this.o.maxSamples; }
  get samples(): number { return this.means.length; }

  /** One base answer's mean log-likelihood (an empty answer, −∞, says nothing about fluency and is left out). */
  add(mean: number): void {
    if (!Number.isFinite(mean) || !this.calibrating) return;
    this.means.push(mean);
    this.cached = null;
  }

  /** The floor, or null while fewer than minSamples base answers were seen. */
  get floor(): number | null {
    if (this.means.length < this.o.minSamples) return null;
    return (this.cached ??= percentile(this.means, this.o.percentile));
  }
}

/** Whether an answer is unlikely: its base mean log-likelihood below the floor (never while there is no floor). */
export function unlikely(answerMean: number, floor: number | null): boolean {
  return floor !== null && answerMean < floor;
}
