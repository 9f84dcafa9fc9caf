// From judged turns to per-token training signals. Pure functions.
//
// binary:  A_t = r on every response token; r = 0 → the sample is masked (no signal).
// opd:     A_t = clip(teacher_t − behaviour_t, ±c), where teacher is the log-prob of the same token
//          under the prompt with the hindsight hint in the last user turn (learn/hint-prompt.ts), and
//          c = 1 as upstream clips it: one badly predicted token (−9 nats) must not outweigh a reward.
// combine: A_t = w_opd·clip(teacher_t − behaviour_t, ±c) + w_rl·r; a turn with only one signal uses that one.
// (Top-K distillation over the student's K most likely tokens is in learn/topk-opd.ts.)

export type Method = 'binary' | 'opd' | 'combine';

export interface SampleSignals {
  /** PRM majority, after overlong shaping; null = no judgement */
  reward: number | null;
  /** teacher log-probs of the response tokens (only when a hint was chosen) */
  teacher: number[] | null;
  behaviour: number[];
}

export interface BuiltSample { advantages: number[]; lossMask: number[]; kind: 'binary' | 'opd' | 'combine' }

/**
 * Overlong reward shaping (DAPO-style): no penalty up to L_max − L_cache tokens, a linear ramp to −1
 * over the last L_cache tokens, −1 beyond L_max.
 */
export function overlongPenalty(length: number, lMax: number, lCache: number): number {
  if (length <= lMax - lCache) return 0;
  if (length <= lMax) return (lMax - lCache - length) / lCache;
  return -1;
}

/** Upstream's clip of teacher − behaviour per token (nats). */
export const OPD_ADVANTAGE_CLIP = 1;

/** The advantages of one turn under a method, or null when it carries no signal for that method. */
export function buildSample(method: Method, s: SampleSignals, weights = { opd: 1, rl: 1 }, opdClip = OPD_ADVANTAGE_CLIP): BuiltSample | null {
  const n = s.behaviour.length;
  const rl = s.reward !== null && s.reward !== 0 ? s.reward : null;
  const opd = s.teacher ? s.teacher.map((t, i) => Math.max(-opdClip, Math.min(opdClip, t - s.behaviour[i]))) : null;
  if (opd && opd.length !== n) throw new RangeError(`teacher log-probs (${opd.length}) and behaviour log-probs (${n}) differ in length`);
  const ones = new Array(n).fill(1);
  if (method === 'binary') return rl === null ? null : { advantages: new Array(n).fill(rl), lossMask: ones, kind: 'binary' };
  if (method === 'opd') return opd ? { advantages: opd, lossMask: ones, kind: 'opd' } : null;
  if (opd && rl !== null) return { advantages: opd.map((a) => weights.opd * a + weights.rl * rl), lossMask: ones, kind: 'combine' };
  if (opd) return { advantages: opd.map((a) => weights.opd * a), lossMask: ones, kind: 'opd' };
  if (rl !== null) return { advantages: new Array(n).fill(weights.rl * rl), lossMask: ones, kind: 'binary' };
  return null;
}

/**
 * A turn's sample in top-K mode, before its distillation set is made at train time: the token
 * advantages carry only the reward term (0 for OPD alone); the set carries the teacher's signal.
 * opd: only turns with hints; combine: turns with hints or a reward (a rewarded turn without hints
 * is distilled towards the teacher on its own prompt, as upstream does).
 */
export function topkSample(method: Method, reward: number | null, hasHints: boolean, n: number, wRl: number): BuiltSample | null {
  const rl = reward !== null && reward !== 0 ? reward : null;
  const ones = new Array(n).fill(1);
  if (method === 'binary') return rl === null ? null : { advantages: new Array(n).fill(rl), lossMask: ones, kind: 'binary' };
  if (method === 'opd') return hasHints ? { advantages: new Array(n).fill(0), lossMask: ones, kind: 'opd' } : null;
  if (hasHints) return { advantages: new Array(n).fill(rl === null ? 0 : wRl * rl), lossMask: ones, kind: rl === null ? 'opd' : 'combine' };
  return rl === null ? null : { advantages: new Array(n).fill(wRl * rl), lossMask: ones, kind: 'binary' };
}

/**
 * The at-least-one rule: a session's first judged turn that has a next state is kept even when
 * neutral, if the session has no kept sample yet. It carries advantage 0 on every token, so it adds
 * no policy gradient: only its tokens to the batch's token count (the loss mean) and, with β > 0, a
 * KL-to-base term. (Upstream keeps such a sample so that every session contributes data.)
 */
export function atLeastOneSample(n: number): BuiltSample {
  return { advantages: new Array(n).fill(0), lossMask: new Array(n).fill(1), kind: 'binary' };
}

/** Group-normalised rewards for responses to the same prompt: (r − mean) / (std + eps). */
export function groupNormalise(rewards: number[], eps = 1e-6): number[] {
  if (rewards.length < 2) return rewards.map(() => 0);
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
  return rewards.map((r) => (r - mean) / (std + eps));
}
