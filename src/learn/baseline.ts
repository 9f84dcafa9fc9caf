// The reward baseline subtracted from each sample's reward term. Pure functions.
//
// With a batch-mean baseline, a batch whose rewards are all equal (eight failures in a row, common
// while the model rarely pleases the user) has every advantage 0: the trainer learns nothing from
// it, and under serving traffic most batches are like that. A baseline over a window of recent
// rewards (this batch's and the ones before it) keeps the expected push of the batch mean — a rare
// success gets a strong one, routine failures a mild one — without throwing uniform batches away.

/**
 * What the trainer subtracts from each reward: nothing, the batch's mean, each same-prompt group's mean (and scale),
 * the recent window's mean, or that mean clipped at zero (lift).
 */
export const REWARD_BASELINES = ['recent', 'lift', 'batch', 'group', 'none'] as const;
export type RewardBaseline = (typeof REWARD_BASELINES)[number];

/** The batch's rewards and up to `window − batch` of the most recent earlier ones (newest first). */
export function rewardWindow(batch: readonly number[], earlier: readonly number[], window: number): number[] {
  return [...batch, ...earlier.slice(0, Math.max(0, window - batch.length))];
}

/** Mean of the reward window (0 when it is empty). */
export function windowBaseline(batch: readonly number[], earlier: readonly number[], window: number): number {
  const all = rewardWindow(batch, earlier, window);
  return all.length === 0 ? 0 : all.reduce((a, b) => a + b, 0) / all.length;
}

/**
 * The lifting baseline: the window's mean while it is below zero, else zero. While the model mostly fails it acts as
 * the recent mean does (a rare success stands out); once the model mostly pleases, a success keeps its whole +1 instead
 * of the sliver above a mean near one, so the reward term still holds what was learned against the KL pull to the base.
 */
export function liftBaseline(batch: readonly number[], earlier: readonly number[], window: number): number {
  return Math.min(0, windowBaseline(batch, earlier, window));
}

/** Default window of the recent-rewards baseline, in samples. */
export const BASELINE_WINDOW = 64;
