// How far training moved the policy from the base model: the mean per-token KL(policy ‖ base),
// estimated on responses the published policy samples (T = 1) to given prompts, as the mean of
// log π(a) − log π_base(a) over their tokens. Reported next to accuracy so a gain is seen with its cost.
import type { Engine, Tokenizer } from '../engine/types.ts';
import { collect } from '../engine/types.ts';

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
