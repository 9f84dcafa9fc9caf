// The loop guard, as pure math: an answer that loops ("The bear had a bear. The bear was a bear. The bear.")
// is never reinforced, whatever the judge said. A user who asked for bears may well approve of such an answer,
// and every approval teaches the policy that saying the topic again is what pleases; the KL term and the entropy
// guard pull the distribution back but not against a reward that keeps paying for the loop. Nor is a looping answer
// distilled (trainer/loop.ts): the teacher reading "The user wants a story about a tree." would teach, at every prefix
// of "The tree had a tree. The tree…", to say the tree once more. The test is the
// evaluation's own repetition check (learn/fluency.ts), read as a density so that long answers are not held to a
// 64-token story's count.
import { ngramCounts, repetitionCheck, REPETITION_DEFAULTS, type RepetitionLimits } from './fluency.ts';

/** What the guard does to a looping answer's reward: 'withhold' caps it at 0, 'punish' makes it −1, 'off' keeps it. */
export type LoopGuard = 'off' | 'withhold' | 'punish';
export const LOOP_GUARDS: readonly LoopGuard[] = ['off', 'withhold', 'punish'];

/** The answer length the fixed repetition limits were set for (the evaluation's 64-token samples). */
const LOOP_REFERENCE_TOKENS = 64;

/** The limits for an answer of n tokens: the fixed limit of n-gram repeats per 64 tokens, never below the fixed limit. */
export function loopLimits(n: number, base: RepetitionLimits = REPETITION_DEFAULTS): RepetitionLimits {
  return { ...base, maxRepeats: Math.max(base.maxRepeats, Math.ceil((base.maxRepeats * n) / LOOP_REFERENCE_TOKENS)) };
}

/** Whether an answer loops: a token n-gram repeated beyond its length's limit, or a long run of one character. */
export function loops(ids: ArrayLike<number>, text: string): boolean {
  return !repetitionCheck(ids, text, loopLimits(ids.length)).ok;
}

/** A judged answer's reward after the guard (null stays null: no judgement, nothing to guard). */
export function guardedReward(reward: number | null, looping: boolean, guard: LoopGuard): number | null {
  if (reward === null || !looping || guard === 'off') return reward;
  return guard === 'withhold' ? Math.min(reward, 0) : -1;
}

/**
 * Per token of an answer, 1 where the token closes an occurrence of a token n-gram beyond its limit (the loop's excess:
 * with a limit of 3, the 4th and later "The hat was very happy."), else 0; all 0 for an answer that does not loop.
 * The tokens the unlikelihood term pushes down (TrainerOptions.loopUnlikelihood): the loop itself, not the opening
 * that led into it.
 */
export function loopExcess(ids: ArrayLike<number>, limits: RepetitionLimits = loopLimits(ids.length)): number[] {
  return ngramCounts(ids, limits.n).map((c) => (c > limits.maxRepeats ? 1 : 0));
}
