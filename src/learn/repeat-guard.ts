// The repeat guard: an answer that repeats one of the recent answers word for word is not reinforced.
//
// Why: when the base model's most likely answer already pleases the user (a short story for a user who wants short
// stories), every +1 lands on that same answer and the policy collapses onto it: after 96 conversations binary told
// one story 147 times out of 150, fluent and "satisfied" by the rule. The KL to the base stays low (the story is the
// base's own mode), so neither the KL term nor the entropy guard (which only caps entropy above the base's) stops it.
// A real user would not be pleased by the same story again. Withholding the reward of a repeat stops the feedback
// loop at its source: the first telling earns its +1, a retelling within the window earns at most 0, so only new
// answers that please are pushed up.
//
// Answers are compared by their exact sampled token ids (no re-tokenizing), across sessions and prompts: the user
// hears the same story whatever the request's wording. The reward itself goes through the loop guard's guardedReward
// (learn/loops.ts): withhold caps it at 0, punish makes it −1.
import type { LoopGuard } from './loops.ts';

export type RepeatGuard = LoopGuard;

/** The recent answers the repeat guard compares against: the last `capacity` answers, oldest forgotten first. */
export class RecentAnswers {
  private readonly order: string[] = [];
  private readonly counts = new Map<string, number>();

  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
    if (!(Number.isInteger(capacity) && capacity >= 1)) throw new RangeError(`the repeat window must be a whole number ≥ 1, got ${capacity}`);
  }

  /** Whether these ids repeat one of the recent answers; then remembers them (so a third telling repeats too). */
  seenThenAdd(ids: ArrayLike<number>): boolean {
    const key = answerKey(ids);
    if (key === '') return false;
    const seen = (this.counts.get(key) ?? 0) > 0;
    this.order.push(key);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    while (this.order.length > this.capacity) {
      const old = this.order.shift()!;
      const n = this.counts.get(old)! - 1;
      if (n === 0) this.counts.delete(old); else this.counts.set(old, n);
    }
    return seen;
  }

  get size(): number { return this.order.length; }
}

/** An answer's identity: its token ids (an empty answer has none and never counts as a repeat). */
export function answerKey(ids: ArrayLike<number>): string {
  return Array.prototype.join.call(ids, ',');
}

/**
 * Share of answers that repeat an earlier answer to the same prompt, word for word (the evaluation's collapse measure:
 * 0 for a model that tells a new story each time, near 1 for one that tells the same story).
 */
export function repeatShare(answers: readonly { prompt: string; text: string }[]): number {
  if (answers.length === 0) return 0;
  const seen = new Map<string, Set<string>>();
  let repeats = 0;
  for (const a of answers) {
    const texts = seen.get(a.prompt) ?? new Set<string>();
    if (texts.has(a.text)) repeats++;
    texts.add(a.text);
    seen.set(a.prompt, texts);
  }
  return repeats / answers.length;
}
