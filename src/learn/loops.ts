// The loop guard, as pure math: an answer that loops ("The bear had a bear. The bear was a bear. The bear.")
// is never reinforced, whatever the judge said. A user who asked for bears may well approve of such an answer,
// and every approval teaches the policy that saying the topic again is what pleases; the KL term and the entropy
// guard pull the distribution back but not against a reward that keeps paying for the loop. Nor is a looping answer
// distilled (trainer/loop.ts): the teacher reading "The user wants a story about a tree." would teach, at every prefix
// of "The tree had a tree. The tree…", to say the tree once more. The test is the
// evaluation's own repetition check (learn/fluency.ts), read as a density so that long answers are not held to a
// 64-token story's count.
import { repetitionCheck, REPETITION_DEFAULTS, type RepetitionLimits } from './fluency.ts';

/** What a guard does to a flagged answer's reward: 'withhold' caps it at 0, 'punish' makes it −1, 'off' keeps it. */
export type GuardAction = 'off' | 'withhold' | 'punish';
export const GUARD_ACTIONS: readonly GuardAction[] = ['off', 'withhold', 'punish'];
/**
 * What the loop guard does to a looping answer: a GuardAction on its whole reward, or 'onset': the tokens from where
 * the loop begins get −1 and the tokens before it keep the judge's reward. A whole-answer −1 also pushes down the
 * good opening that looping and non-looping answers share ("One day, Leo went for a walk. Leo found a fish…"), so the
 * same tokens are pushed up in one answer and down in the next; the onset form puts the penalty where the repetition is.
 */
export type LoopGuard = GuardAction | 'onset';
export const LOOP_GUARDS: readonly LoopGuard[] = [...GUARD_ACTIONS, 'onset'];

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

/** A judged answer's reward after the guard (null stays null: no judgement, nothing to guard; 'onset' acts per token, see loopPenalty). */
export function guardedReward(reward: number | null, looping: boolean, guard: LoopGuard): number | null {
  if (reward === null || !looping || guard === 'off' || guard === 'onset') return reward;
  return guard === 'withhold' ? Math.min(reward, 0) : -1;
}

/**
 * The first token of an answer's loop under the limits: the first token of the n-gram occurrence that passes the
 * repeat limit, or the token that carries the character run past its limit (pieces[i] is token i's text); −1 when
 * the answer stays within the limits.
 */
export function loopOnset(ids: ArrayLike<number>, pieces: readonly string[], limits: RepetitionLimits): number {
  let onset = -1;
  const counts = new Map<string, number>();
  for (let i = 0; i + limits.n <= ids.length; i++) {
    const key = Array.prototype.slice.call(ids, i, i + limits.n).join(',');
    const c = (counts.get(key) ?? 0) + 1;
    counts.set(key, c);
    if (c > limits.maxRepeats) { onset = i; break; }
  }
  let run = 0, prev = '';
  for (let t = 0; t < pieces.length && (onset < 0 || t < onset); t++) {
    for (const ch of pieces[t]) {
      run = ch === prev && !/\s/.test(ch) ? run + 1 : 1;
      prev = ch;
      if (!/\s/.test(ch) && run > limits.maxCharRun) return t;
    }
  }
  return onset;
}

/**
 * A looping answer's advantages under the 'onset' guard: the reward's advantages up to the loop's first token
 * (zeros where the answer had no reward sample), `penalty` from there on.
 */
export function loopPenalty(advantages: readonly number[] | null, n: number, onset: number, penalty: number): number[] {
  return Array.from({ length: n }, (_, i) => (i >= onset ? penalty : advantages?.[i] ?? 0));
}
