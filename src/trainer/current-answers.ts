// Answers the current weights give to the prompts of stale samples. Through `serve`, unpaced, most steps are taken
// after the traffic on answers written several versions back; terms computed on that old text (the KL and entropy
// regularisers, the distillation towards the hinted teacher) then shape how the policy treats text it no longer
// writes. An answer drawn now from the same prompt lets those terms act on the policy's own text:
// - an anchor answer carries only the KL and entropy terms (zero advantages, no distillation set);
// - a refreshed answer (--stale-distill refresh) also carries the stale turn's distillation set, computed on it in
//   place of the old answer — on-policy distillation with the hint the user's reply gave to the old answer.
import type { Datum, Engine } from '../engine/types.ts';
import { collect } from '../engine/types.ts';

/**
 * Answers are drawn for samples at least this many versions behind. One version behind is the text the policy wrote a
 * step ago, as in-process training always has; there, anchors only diluted the reward (binary on bear +60/+57/+80
 * with them against +85/+84 without; docs/benchmarks.md, issue 12 session 18).
 */
export const ANCHOR_STALENESS = 2;

/** Seed of the answer to a turn's prompt: fixed by the turn, so a step that is retried draws the same answer. */
const answerSeed = (turnId: number) => 0xa9c4 + turnId;

/**
 * The published weights' answer to a sample's prompt, at its temperature and at most its length, as a datum with zero
 * advantages (null when the prompt leaves no room or the answer is empty).
 */
export async function currentAnswer(engine: Engine, sample: Pick<Datum, 'promptIds' | 'responseIds' | 'temperature'>, turnId: number): Promise<Datum | null> {
  const { promptIds, responseIds } = sample, temperature = sample.temperature ?? 1;
  const maxTokens = Math.min(engine.info.contextLength - promptIds.length, Math.max(1, responseIds.length));
  if (maxTokens <= 0) return null;
  const a = await collect(engine.sample(promptIds, { maxTokens, temperature, topP: 1, topK: 0, seed: answerSeed(turnId), weights: 'published', priority: 'low' }));
  if (!a.ids.length) return null;
  return { promptIds, responseIds: a.ids, behaviourLogprobs: a.logprobs, advantages: new Array(a.ids.length).fill(0), lossMask: new Array(a.ids.length).fill(1), temperature };
}

/**
 * Which samples get an anchor answer: up to `max` of those at least ANCHOR_STALENESS versions behind, stalest first
 * (ties in batch order), leaving out `exclude` (samples that already have a current answer). Indices into the batch.
 */
export function anchorPicks(staleness: readonly number[], max: number, exclude: ReadonlySet<number> = new Set()): number[] {
  return staleness.map((_, i) => i).filter((i) => staleness[i] >= ANCHOR_STALENESS && !exclude.has(i)).sort((a, b) => staleness[b] - staleness[a] || a - b).slice(0, Math.max(0, max));
}
