// Episode rewards and group advantages, pure.
//
// Integrated reward (RLAnything): r = outcome + λ · mean(step scores) over the steps the PRM scored
// (no scores → the outcome alone). GRPO: within a group of G episodes of one task,
// A_i = (r_i − mean) / (std + ε); a group whose rewards are all equal carries no signal and is
// skipped, as are failed episodes (they never enter a group's statistics).
import { groupNormalise } from '../learn/advantages.ts';

export function integratedReward(outcome: number, stepScores: number[], lambda: number): number {
  const valid = stepScores.filter((s) => Number.isFinite(s));
  if (lambda === 0 || valid.length === 0) return outcome;
  return outcome + lambda * (valid.reduce((a, b) => a + b, 0) / valid.length);
}

/** Per-episode advantages for a group, or null when the group has no reward variance (or < 2 episodes). */
export function groupAdvantages(rewards: number[], eps = 1e-6): number[] | null {
  if (rewards.length < 2) return null;
  const spread = Math.max(...rewards) - Math.min(...rewards);
  if (spread < 1e-9) return null;
  return groupNormalise(rewards, eps);
}

/** Unbiased pass@k from n samples with c correct: 1 − C(n−c, k)/C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples (got ${n})`);
  if (n - c < k) return 1;
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** A linear schedule: 1 at the start (share 0), `floor` at the end (share 1), clamped between. */
export function linearDecay(share: number, floor: number): number {
  const x = Math.min(1, Math.max(0, share));
  return 1 - (1 - floor) * x;
}
