// The default learning recipe: the one set of hyperparameters that `serve`, `demo` and
// `bench personalize` share when no flag says otherwise (and TrainerLoop's own defaults). It is
// what measured best — see docs/benchmarks.md, "Server path: the default recipe" — so a user who
// serves gets what the benchmark shows. Change a default here, with the measurement that backs it.
import type { Method } from '../learn/advantages.ts';

export interface Recipe {
  method: Method;
  learningRate: number;
  batchSize: number;
  lora: { rank: number; alpha: number };
  rewardBaseline: 'none' | 'batch' | 'group' | 'recent';
  /** the at-least-one rule (see TrainerOptions.keepNeutral) */
  keepNeutral: boolean;
  /** β of the KL-to-base term in the loss */
  klCoef: number;
  /** hindsight answers: an approved answer after a correction also trains the corrected request */
  hindsight: boolean;
  /** scale of negative reward terms (1: as hard as positive ones) */
  negativeWeight: number;
}

export const RECIPE: Readonly<Recipe> = Object.freeze({
  method: 'binary',
  learningRate: 3e-3,
  batchSize: 8,
  lora: Object.freeze({ rank: 8, alpha: 16 }),
  rewardBaseline: 'recent',
  keepNeutral: false,
  // β = 0.3: chosen by measurement on stories260k-chat over 3 seeds (docs/benchmarks.md, the β study)
  klCoef: 0.3,
  // hindsight on: binary gained +26 to +60 points of held-out satisfied-and-fluent with it on chat-cat/dog/frog-lover
  // (medians of 3 seeds), against +0 to +18 without (seed 1); docs/benchmarks.md, issue 12 session 6
  hindsight: true,
  negativeWeight: 1,
});
