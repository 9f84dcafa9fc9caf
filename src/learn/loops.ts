// The loop guard, as pure math: an answer that loops ("The bear had a bear. The bear was a bear. The bear.")
// is never reinforced, whatever the judge said. A user who asked for bears may well approve of such an answer,
// and every approval teaches the policy that saying the topic again is what pleases; the KL term and the entropy
// guard pull the distribution back but not against a reward that keeps paying for the loop. Nor is a looping answer
// distilled (trainer/loop.ts): the teacher reading "The user wants a story about a tree." would teach, at every prefix
// of "The tree had a tree. The tree…", to say the tree once more. The test is the
// evaluation's own repetition check (learn/fluency.ts), read as a density so that long answers are not held to a
// 64-token story's count.
import { repetitionCheck, REPETITION_DEFAULTS, type RepetitionLimits } from './fluency.ts';

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

/** What the loop guard's reward covers: the whole answer, or its tokens from where the loop starts. */
export type LoopScope = 'answer' | 'onset';
export const LOOP_SCOPES: readonly LoopScope[] = ['answer', 'onset'];

/**
 * Where a looping answer starts to loop: the first token of the earliest 3-token piece that recurs past the answer's
 * limit, or of the token that carries a run of one character past its limit (`prefixText(k)` is the text of the first k
 * tokens; a run only grows with the prefix, so the earliest such k is found by bisection). Before it the answer is
 * within the limits the evaluation holds a 64-token story to; from it on it is the loop. An answer that does not loop
 * has no onset (its length).
 */
export function loopOnset(ids: ArrayLike<number>, prefixText: (k: number) => string): number {
  const n = ids.length, limits = loopLimits(n);
  let onset = n;
  const counts = new Map<string, number>();
  for (let i = 0; i + limits.n <= n; i++) {
    const key = Array.prototype.slice.call(ids, i, i + limits.n).join(',');
    const c = (counts.get(key) ?? 0) + 1;
    counts.set(key, c);
    if (c > limits.maxRepeats) { onset = i; break; }
  }
  const runs = (k: number) => repetitionCheck([], prefixText(k), limits).longestCharRun > limits.maxCharRun;
  if (n > 0 && runs(n)) {
    let lo = 1, hi = n; // the smallest prefix length whose text runs past the limit
    while (lo < hi) { const mid = (lo + hi) >> 1; if (runs(mid)) hi = mid; else lo = mid + 1; }
    onset = Math.min(onset, lo - 1);
  }
  return onset;
}

/**
 * A looping answer's advantages under the onset scope: the tokens before the onset keep what the judged reward gave
 * them (`before`), the loop gets the guard's (`after`). So an approved bear story that says "bear" once too often is
 * still reinforced for the story it told, and only what it said from the loop on is pushed down.
 */
export function advantagesFromOnset(n: number, onset: number, before: number, after: number): number[] {
  return Array.from({ length: n }, (_, t) => (t < onset ? before : after));
}
