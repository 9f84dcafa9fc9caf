// Judges turn (answer, next state) into a reward and, for OPD, a hint. Every vote is kept raw.
import { parseBoxed, majority, parseHintVote, selectHint, hintVoteOf, isGroundedHint, hintMissingFrom, hintMetBy, type Score } from '../learn/votes.ts';
import { judgePrompts, type JudgeInput } from './prompts.ts';
import { BackendUnavailable, type ChatBackend } from './backends.ts';
import { lexicalScore, lexicalHint, praiseOnly, complaintOnly, movesOn } from './lexical.ts';

export interface Vote {
  kind: 'prm' | 'hint';
  text: string;
  score: Score | null;
  hint: string | null;
  latencyMs: number;
  backend: string;
  error?: string;
  /** why the judge set aside the hint this vote gave (its text keeps it) */
  dropped?: string;
}

export interface Judgement {
  score: Score;
  hint: string | null;
  votes: Vote[];
  backend: string;
  /** set when a rule over the votes, not the PRM majority, gave the score */
  rule?: string;
}

export interface Judge {
  readonly name: string;
  judge(input: JudgeInput, opts: { hints: boolean }): Promise<Judgement>;
}

export interface PrmJudgeOptions {
  m?: number;
  temperature?: number;
  maxTokens?: number;
  minHintLength?: number;
  /** set aside hints none of whose content words the next state used (learn/votes.ts, isGroundedHint) */
  groundHints?: boolean;
  /**
   * When a user's reply draws at least this many (grounded) hint votes asking for something the answer lacks
   * entirely (hintMissingFrom), the turn scores −1 whatever the PRM majority: the reply says what was missing.
   * 0: off. Hint votes are then asked on every user turn, also where no hint is wanted for training.
   */
  missingHintVotes?: number;
  /**
   * When a user's reply draws at least this many (grounded) hint votes asking for something the answer already has
   * (hintMetBy) and none asking for what it lacks, the turn scores +1 whatever the PRM majority: the reply named a
   * thing the answer has, as praise does and a complaint about something missing does not. 0: off.
   */
  metHintVotes?: number;
  /**
   * What the reply's own words decide (lexical.ts): 'veto' — a reply that is praise and nothing else by its words
   * (praiseOnly: "Great, more like this please.") never scores −1, it scores 0; 'decide' — such a reply scores +1, and
   * one that is a complaint and nothing else (complaintOnly: "It needs a cat.") scores −1, unless the hint rules found
   * the opposite (hints asking for what the answer lacks keep a praising reply at −1, and for what it has keep a
   * complaining one at +1), and a reply that moves on to a new request (movesOn: "Thanks! Now one about a cat.") is
   * not a complaint whatever the hint votes say — +1 with praise, at least 0 without — and gives no hint; 'off' — the
   * votes alone.
   */
  wordRule?: WordRule;
}

export type WordRule = 'off' | 'veto' | 'decide';
export const WORD_RULES: readonly WordRule[] = ['off', 'veto', 'decide'];

/** m PRM votes (and m hint votes) from an LLM backend, all in flight at once (the backend caps them). */
export class PrmJudge implements Judge {
  readonly name: string;
  private readonly backend: ChatBackend;
  private readonly o: Required<PrmJudgeOptions>;

  constructor(backend: ChatBackend, o: PrmJudgeOptions = {}) {
    this.backend = backend;
    this.name = backend.name;
    this.o = { m: 3, temperature: 0.6, maxTokens: 2048, minHintLength: 10, groundHints: false, missingHintVotes: 0, metHintVotes: 0, wordRule: 'off', ...o };
  }

  private async vote(kind: 'prm' | 'hint', input: JudgeInput): Promise<Vote> {
    const t0 = performance.now();
    try {
      const prompts = judgePrompts(this.backend.promptStyle ?? 'full');
      const text = await this.backend.complete(kind === 'prm' ? prompts.prm(input) : prompts.hint(input), { temperature: this.o.temperature, maxTokens: this.o.maxTokens });
      const parsed = kind === 'prm' ? { score: parseBoxed(text), hint: null } : parseHintVote(text);
      return { kind, text, score: parsed.score, hint: parsed.hint, latencyMs: performance.now() - t0, backend: this.name };
    } catch (e) {
      return { kind, text: '', score: null, hint: null, latencyMs: performance.now() - t0, backend: this.name, error: `${(e as Error).name}: ${(e as Error).message}` };
    }
  }

  async judge(input: JudgeInput, opts: { hints: boolean }): Promise<Judgement> {
    const crossCheck = (this.o.missingHintVotes > 0 || this.o.metHintVotes > 0) && input.nextState.role === 'user';
    const kinds: ('prm' | 'hint')[] = [...Array(this.o.m).fill('prm'), ...(opts.hints || crossCheck ? Array(this.o.m).fill('hint') : [])];
    const votes = await Promise.all(kinds.map((k) => this.vote(k, input)));
    // the endpoint was down for every vote: judge again later rather than record a neutral verdict
    if (votes.every((v) => v.error?.startsWith('BackendUnavailable'))) throw new BackendUnavailable(votes[0].error ?? 'judge unavailable');
    const prm = votes.filter((v) => v.kind === 'prm');
    const hints = votes.filter((v) => v.kind === 'hint');
    if (this.o.groundHints) {
      for (const v of hints) if (v.hint && !isGroundedHint(v.hint, input.nextState.text)) { v.dropped = 'none of its words are in the next state'; v.hint = null; }
    }
    const judgement: Judgement = {
      score: majority(prm.map((v) => v.score)),
      hint: opts.hints ? selectHint(hints.map(hintVoteOf), this.o.minHintLength) : null,
      votes, backend: this.name,
    };
    const prmMajority = judgement.score;
    let hintSays: Score | null = null;
    if (crossCheck) {
      const missing = hints.filter((v) => v.score === 1 && v.hint && hintMissingFrom(v.hint, input.response)).length;
      const met = hints.filter((v) => v.score === 1 && v.hint && hintMetBy(v.hint, input.response)).length;
      if (this.o.missingHintVotes > 0 && missing >= this.o.missingHintVotes) {
        hintSays = -1;
        if (judgement.score !== -1) { judgement.rule = `${missing} hint vote(s) ask for what the answer lacks (PRM majority ${judgement.score})`; judgement.score = -1; }
      } else if (this.o.metHintVotes > 0 && met >= this.o.metHintVotes && missing === 0) {
        hintSays = 1;
        if (judgement.score !== 1) { judgement.rule = `${met} hint vote(s) ask for what the answer has (PRM majority ${judgement.score})`; judgement.score = 1; }
      }
    }
    if (this.o.wordRule !== 'off' && input.nextState.role === 'user') {
      const text = input.nextState.text, was = judgement.score, why = judgement.rule ? `${judgement.rule}; ` : '';
      if (this.o.wordRule === 'decide' && movesOn(text)) {
        // the hint votes read "Now one about a cat." as what the answer lacked; it is the user's next request
        // (the hint rules' verdict is set aside with them: the PRM majority stands, at least 0, +1 with praise)
        judgement.hint = null;
        const praised = praiseOnly(text), score: Score = praised ? 1 : prmMajority === -1 ? 0 : prmMajority;
        if (score !== was) { judgement.rule = `the reply ${praised ? 'praises and ' : ''}moves on to a new request (${why}score ${was})`; judgement.score = score; }
      } else if (this.o.wordRule === 'veto' && was === -1 && praiseOnly(text)) {
        judgement.rule = `the reply's words are praise only (${why}PRM majority −1): no reward`;
        judgement.score = 0;
      } else if (this.o.wordRule === 'decide' && was !== 1 && hintSays !== -1 && praiseOnly(text)) {
        judgement.rule = `the reply's words are praise only (${why}score ${was})`;
        judgement.score = 1;
      } else if (this.o.wordRule === 'decide' && was !== -1 && hintSays !== 1 && complaintOnly(text)) {
        judgement.rule = `the reply's words are a complaint only (${why}score ${was})`;
        judgement.score = -1;
      }
    }
    return judgement;
  }
}

/** No model: explicit feedback words in the user's reply (see lexical.ts for where it is weak). */
export class LexicalJudge implements Judge {
  readonly name = 'lexical';
  async judge(input: JudgeInput, opts: { hints: boolean }): Promise<Judgement> {
    const t0 = performance.now();
    // tool results carry no feedback words: a clean result is progress, an error-looking one is not
    const score: Score = input.nextState.role === 'tool' ? (input.nextState.looksLikeError ? -1 : 1) : lexicalScore(input.nextState.text);
    const hint = opts.hints && input.nextState.role === 'user' ? lexicalHint(input.nextState.text) : null;
    const vote: Vote = { kind: 'prm', text: `lexical score ${score}${hint ? `; hint: ${hint}` : ''}`, score, hint, latencyMs: performance.now() - t0, backend: 'lexical' };
    return { score, hint, votes: [vote], backend: 'lexical' };
  }
}
