// How likely the base model (adapters off) finds a response: the mean of its per-token log-probs after the prompt.
// The evaluation's fluency check (bench/evaluate.ts) and the trainer's likelihood guard (trainer/loop.ts) both read it.
import type { Engine } from './types.ts';
import { meanLogLikelihood } from '../learn/fluency.ts';

/** Mean base log-likelihood per response token; −∞ for an empty response (nothing said is not fluent). */
export async function baseMeanLogLikelihood(engine: Pick<Engine, 'score'>, promptIds: number[], responseIds: number[]): Promise<number> {
  if (responseIds.length === 0) return -Infinity;
  const [lp] = await engine.score([{ promptIds, responseIds }], { adapter: 'base' });
  return meanLogLikelihood(lp);
}
