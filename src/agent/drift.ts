// How far training moved the policy from the base model: the mean per-token KL(policy ‖ base),
// estimated on responses the published policy samples (T = 1) to given prompts, as the mean of
// log π(a) − log π_base(a) over their tokens. Reported next to accuracy so a gain is seen with its cost.
import type { Engine, Tokenizer } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import { fluencyBand, isFluent, meanLogLikelihood, repetitionCheck } from '../learn/fluency.ts';

export async function klToBase(engine: Engine, prompts: number[][], o: { samples: number; maxTokens: number; seed: number }): Promise<number> {
  let sum = 0, tokens = 0;
  for (const [i, promptIds] of prompts.entries()) {
    for (let k = 0; k < o.samples; k++) {
      const maxTokens = Math.min(o.maxTokens, engine.info.contextLength - promptIds.length - 1);
      if (maxTokens < 1) continue;
      const s = await collect(engine.sample(promptIds, { maxTokens, temperature: 1, topP: 1, topK: 0, seed: o.seed + i * 101 + k }));
      if (s.ids.length === 0) continue;
      const [base] = await engine.score([{ promptIds, responseIds: s.ids }], { adapter: 'base' });
      s.logprobs.forEach((lp, t) => { sum += lp - base[t]; tokens++; });
    }
  }
  return tokens ? sum / tokens : 0;
}

/** Plain chat prompts outside the agent tasks (drift on what the model did before). */
export const STORY_PROMPTS = ['Tell me a story about a cat.', 'Write a short story about a girl and her dog.', 'Tell me a happy story.', 'Can you tell me a story about the sea?'];

export function chatPrompts(tok: Tokenizer, texts: string[]): number[][] {
  return texts.map((t) => tok.encodeChat([{ role: 'user', content: t }]));
}

export interface StoryFluency {
  /** share of fluent samples: likely enough under the base model (band from the base's own samples) and free of loops */
  policy: number;
  base: number;
  /** mean per-token log-likelihood under the base model */
  policyMeanLL: number;
  baseMeanLL: number;
  samples: number;
  /** the policy's first sample for each prompt, to read */
  examples: string[];
}

const CALIBRATION_SEED = (i: number) => 6007 * i + 100_003;

/**
 * Do story requests still get stories? The base model's own samples (other seeds) set the fluency
 * band (src/learn/fluency.ts); then the published policy and the base answer the same requests with
 * the same seeds, and the share of fluent answers of each is reported.
 */
export async function storyFluency(engine: Engine, prompts: number[][], o: { samples: number; maxTokens: number; seed: number }): Promise<StoryFluency> {
  const sample = async (promptIds: number[], seed: number, weights: 'base' | 'published') => {
    const maxTokens = Math.min(o.maxTokens, engine.info.contextLength - promptIds.length - 1);
    const r = await collect(engine.sample(promptIds, { maxTokens, temperature: 1, topP: 1, topK: 0, seed, weights }));
    const [lp] = r.ids.length ? await engine.score([{ promptIds, responseIds: r.ids }], { adapter: 'base' }) : [[]];
    return { text: engine.tokenizer.decode(r.ids), ids: r.ids, ll: meanLogLikelihood(lp) };
  };
  const calibration: number[] = [];
  for (const [i, p] of prompts.entries()) for (let k = 0; k < o.samples; k++) calibration.push((await sample(p, CALIBRATION_SEED(i * o.samples + k), 'base')).ll);
  const band = fluencyBand(calibration);
  const rate = { policy: 0, base: 0 }, ll = { policy: 0, base: 0 };
  const examples: string[] = [];
  for (const [i, p] of prompts.entries()) {
    for (let k = 0; k < o.samples; k++) {
      for (const w of ['published', 'base'] as const) {
        const s = await sample(p, o.seed + i * 101 + k, w);
        const key = w === 'published' ? 'policy' : 'base';
        if (isFluent(s.ll, band, repetitionCheck(s.ids, s.text))) rate[key]++;
        ll[key] += Number.isFinite(s.ll) ? s.ll : 0;
        if (w === 'published' && k === 0) examples.push(s.text);
      }
    }
  }
  const n = Math.max(1, prompts.length * o.samples);
  return { policy: rate.policy / n, base: rate.base / n, policyMeanLL: ll.policy / n, baseMeanLL: ll.base / n, samples: n, examples };
}
