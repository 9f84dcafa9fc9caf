// Building the configured judge: `lexical` (default, no model), `self` (the served model with
// adapters off), `llm` (an OpenAI-compatible endpoint), or `none`.
import type { Engine } from '../engine/types.ts';
import { LexicalJudge, PrmJudge, type Judge } from './judge.ts';
import { LlmBackend, SelfBackend } from './backends.ts';

export interface JudgeConfig {
  kind: 'none' | 'lexical' | 'self' | 'llm';
  votes: number;
  temperature: number;
  maxTokens: number;
  url?: string;
  model?: string;
  apiKey?: string;
  timeoutMs: number;
  retries: number;
  concurrency: number;
}

export const JUDGE_DEFAULTS: JudgeConfig = { kind: 'lexical', votes: 3, temperature: 0.6, maxTokens: 2048, timeoutMs: 120_000, retries: 3, concurrency: 4 };

/**
 * Votes per turn when none are asked for. The self judge runs on the served model's own base weights, so
 * votes cost only local decode: 7 of them gained bear +66 against 3 votes' +42 (3 seeds; docs/benchmarks.md,
 * issue 12 session 12). An LLM endpoint is paid per request and keeps 3.
 */
export const SELF_JUDGE_VOTES = 7;
export function defaultVotes(kind: JudgeConfig['kind']): number {
  return kind === 'self' ? SELF_JUDGE_VOTES : JUDGE_DEFAULTS.votes;
}

export function createJudge(c: JudgeConfig, engine: Engine): Judge | null {
  switch (c.kind) {
    case 'none': return null;
    case 'lexical': return new LexicalJudge();
    case 'self': return new PrmJudge(new SelfBackend(engine), { m: c.votes, temperature: c.temperature, maxTokens: c.maxTokens });
    case 'llm':
      if (!c.url || !c.model) throw new Error('the llm judge needs --judge-url (an OpenAI-compatible base URL) and --judge-model');
      return new PrmJudge(new LlmBackend({ baseUrl: c.url, model: c.model, apiKey: c.apiKey, timeoutMs: c.timeoutMs, retries: c.retries, maxConcurrent: c.concurrency }), { m: c.votes, temperature: c.temperature, maxTokens: c.maxTokens });
  }
}
