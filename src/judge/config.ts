// Building the configured judge: `lexical` (default, no model), `self` (the served model with
// adapters off), `llm` (an OpenAI-compatible endpoint), or `none`.
import type { Engine } from '../engine/types.ts';
import { LexicalJudge, PrmJudge, type Judge, type PrmJudgeOptions, type WordRule } from './judge.ts';
import { LlmBackend, SelfBackend } from './backends.ts';
import type { PromptStyle } from './prompts.ts';

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
  /** the self judge's hint rules where it takes the compact prompts (selfJudgeOptions); false: off */
  hintRules?: boolean;
  /** what the reply's own words decide, where the hint rules are on (PrmJudgeOptions.wordRule; default SELF_JUDGE_WORD_RULE) */
  wordRule?: WordRule;
}

/**
 * The self judge's word rule where its hint rules are on (PrmJudgeOptions.wordRule): a reply that is praise by its words
 * alone is +1 and one that is a complaint by its words alone −1, unless the hint votes found the opposite. The score
 * votes of stories260k-chat read much plain praise as a complaint ("Lovely story, thanks." −1 on every vote) and some
 * wishes as praise ("could you include one next time?" +1). On replies written blind for 8 topics it never saw (`bench
 * judge`, personas/judge/), sign agreement went from 64.6% with the veto to 81.5% (docs/benchmarks.md, issue 12 session 29).
 */
export const SELF_JUDGE_WORD_RULE: WordRule = 'decide';

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

/**
 * How the self judge reads its votes. A model small enough for the compact prompts (stories260k-chat) makes
 * its hint votes up: names from the story, objects from nowhere. So its hints must be grounded in the next
 * state, and grounded hints asking for what the answer lacks (2 of the hint votes) outweigh the score votes'
 * reading of the reply's tone, which takes "My daughter only likes stories with bears." for praise. On
 * stories260k-chat that lifted sign agreement with the personas' feedback from 83% to 88% (bear 75 → 85%) and
 * cut wrong hints from 268 of 514 to 0 of 237 (docs/benchmarks.md, issue 12 session 14). Its cost: a new
 * request after an answer ("Thanks! Now one about a cat.") also reads as a correction. The mirror rule: grounded hints
 * asking for what the answer already has (2 votes, none asking for what it lacks) make the turn +1, where the score votes
 * read "that bunny made her giggle" after a story with a bunny as a complaint. And the praise veto: a reply that is
 * praise by its words and nothing else ("Great, more like this please.") is never −1 — the score votes read that one as
 * a complaint on every vote; with the veto bear's approved answers judged −1 went from 48 to 0 in one run and its
 * complaints' −1s stayed (docs/benchmarks.md, issue 12 session 17). Since session 29 the reply's words decide both ways
 * (SELF_JUDGE_WORD_RULE). A model that reads
 * the full prompts is left to read the reply itself (not measured with these rules).
 * `hintRules: false` (`--no-judge-hint-rules`) turns all four off.
 */
export function selfJudgeOptions(c: Pick<JudgeConfig, 'votes' | 'temperature' | 'maxTokens' | 'hintRules' | 'wordRule'>, style: PromptStyle): PrmJudgeOptions {
  const on = style === 'compact' && c.hintRules !== false;
  return { m: c.votes, temperature: c.temperature, maxTokens: c.maxTokens, groundHints: on, missingHintVotes: on ? SELF_JUDGE_MISSING_HINT_VOTES : 0, metHintVotes: on ? SELF_JUDGE_MET_HINT_VOTES : 0, wordRule: on ? c.wordRule ?? SELF_JUDGE_WORD_RULE : 'off' };
}

/** --no-judge-hint-rules on the commands that judge. */
export const NO_HINT_RULES_HELP = 'turn off the small self judge\'s hint rules: hints must use the reply\'s own words, 2 hint votes asking for what the answer lacks make the turn −1, 2 asking for what it already has (none for what it lacks) make it +1, a reply that is praise by its words alone is +1 and one that is a complaint by its words alone −1 (unless the hint votes found the opposite), and a reply that moves on to a new request ("Thanks! Now one about a cat.") is not read as a correction';

/** Hint votes (of the self judge's m) that must ask for what the answer lacks to make the turn −1. */
export const SELF_JUDGE_MISSING_HINT_VOTES = 2;

/** Hint votes that must ask for what the answer already has (and none for what it lacks) to make the turn +1. */
export const SELF_JUDGE_MET_HINT_VOTES = 2;

export function createJudge(c: JudgeConfig, engine: Engine): Judge | null {
  switch (c.kind) {
    case 'none': return null;
    case 'lexical': return new LexicalJudge();
    case 'self': {
      const backend = new SelfBackend(engine);
      return new PrmJudge(backend, selfJudgeOptions(c, backend.promptStyle));
    }
    case 'llm':
      if (!c.url || !c.model) throw new Error('the llm judge needs --judge-url (an OpenAI-compatible base URL) and --judge-model');
      return new PrmJudge(new LlmBackend({ baseUrl: c.url, model: c.model, apiKey: c.apiKey, timeoutMs: c.timeoutMs, retries: c.retries, maxConcurrent: c.concurrency }), { m: c.votes, temperature: c.temperature, maxTokens: c.maxTokens });
  }
}
