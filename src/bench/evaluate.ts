// Evaluation of the live policy: held-out satisfaction (k samples per held-out prompt at the serving
// temperature, fixed seeds), drift as KL(policy‖base) on neutral prompts (Monte Carlo: sampled from
// the policy at T = 1, mean of log π − log π_base per token), and the log-likelihood of a fixed
// reference text.
import type { Engine } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import { check, type Persona } from './persona.ts';

export const NEUTRAL_PROMPTS = ['Once upon a time', 'The sun was', 'One day', 'They went home'];
export const REFERENCE_TEXT = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park.';

function promptIds(engine: Engine, text: string): number[] {
  return engine.tokenizer.encodeChat([{ role: 'user', content: text }]);
}

export async function satisfactionRate(engine: Engine, persona: Persona, k: number, weights: 'published' | 'base' = 'published'): Promise<number> {
  let ok = 0, n = 0;
  for (const p of persona.heldOutPrompts) {
    const ids = promptIds(engine, p);
    for (let i = 0; i < k; i++) {
      const r = await collect(engine.sample(ids, { maxTokens: persona.maxTokens ?? 48, temperature: persona.temperature ?? 1, topP: 1, topK: 0, seed: 7919 * i + 17, weights }));
      if (check(persona.satisfied, r.text)) ok++;
      n++;
    }
  }
  return ok / n;
}

export async function klToBase(engine: Engine, samplesPerPrompt = 4, maxTokens = 32): Promise<number> {
  let sum = 0, tokens = 0;
  for (const p of NEUTRAL_PROMPTS) {
    const ids = promptIds(engine, p);
    for (let i = 0; i < samplesPerPrompt; i++) {
      const r = await collect(engine.sample(ids, { maxTokens, temperature: 1, topP: 1, topK: 0, seed: 104729 * i + 3 }));
      if (r.ids.length === 0) continue;
      const [base] = await engine.score([{ promptIds: ids, responseIds: r.ids }], { adapter: 'base' });
      for (let t = 0; t < r.ids.length; t++) sum += r.logprobs[t] - base[t];
      tokens += r.ids.length;
    }
  }
  return tokens ? sum / tokens : 0;
}

export async function referenceLogLikelihood(engine: Engine): Promise<number> {
  const prompt = engine.tokenizer.encode('');
  const full = engine.tokenizer.encode(REFERENCE_TEXT);
  const response = full.slice(prompt.length);
  const [lp] = await engine.score([{ promptIds: prompt, responseIds: response }]);
  return lp.reduce((a, b) => a + b, 0) / Math.max(1, lp.length);
}
