// The judge loop: finds paired main turns without a judgement, judges them a few at a time, and
// stores every vote. It never delays serving (it runs on its own timer and awaits the judge), and
// a judge outage defers the turn with exponential backoff instead of dropping it.
import type { Store, TurnRow } from '../store/store.ts';
import type { Judge } from './judge.ts';
import { BackendUnavailable } from './backends.ts';
import { looksLikeError, type JudgeInput } from './prompts.ts';
import { contentText, type WireMessage } from '../conversation/messages.ts';
import { Periodic } from '../util/periodic.ts';

export interface JudgeLoopOptions {
  /** also ask for hindsight hints (OPD) */
  hints: boolean;
  /** show the judge the conversation before the answer (upstream shows only answer and next state) */
  includeContext?: boolean;
  pollMs?: number;
  /** turns judged at once */
  concurrency?: number;
  /** first retry delay after an outage; doubles per attempt, capped at 10 minutes */
  retryBaseMs?: number;
  log?: (line: string) => void;
}

/** What the judge sees of a stored turn. */
export function judgeInputOf(turn: TurnRow, includeContext: boolean): JudgeInput {
  const answer = JSON.parse(turn.answer_json ?? '{"content":"","toolCalls":[]}') as { content: string; toolCalls: { name: string; arguments: string }[] };
  const response = [answer.content, ...answer.toolCalls.map((c) => `[tool call] ${c.name}(${c.arguments})`)].filter(Boolean).join('\n');
  const next = JSON.parse(turn.next_state_json!) as { role: 'user' | 'tool'; messages: WireMessage[] };
  const text = next.messages.map((m) => contentText(m.content)).join('\n\n');
  const context = includeContext ? (JSON.parse(turn.request_json) as { messages: WireMessage[] }).messages : undefined;
  return { response, nextState: { role: next.role, text, looksLikeError: next.role === 'tool' && looksLikeError(text) }, context };
}

export class JudgeLoop {
  private readonly store: Store;
  private readonly judge: Judge;
  private readonly o: Required<Omit<JudgeLoopOptions, 'log'>> & { log: (line: string) => void };
  private readonly periodic: Periodic;
  judged = 0;
  deferred = 0;

  constructor(store: Store, judge: Judge, o: JudgeLoopOptions) {
    this.store = store;
    this.judge = judge;
    this.o = { includeContext: false, pollMs: 500, concurrency: 2, retryBaseMs: 2000, log: () => {}, ...o };
    this.periodic = new Periodic(() => this.tick(), this.o.pollMs, (e) => this.o.log(`judge loop: ${(e as Error).message}`));
  }

  start(): void { this.periodic.start(); }

  stop(): Promise<void> { return this.periodic.stop(); }

  /** null while the loop runs and succeeds (see Periodic.health). */
  health(): string | null { return this.periodic.health(); }

  /** Judge what is due now; returns when those turns are judged or deferred. */
  async tick(now = Date.now()): Promise<number> {
    const turns = this.store.turnsToJudge(this.o.concurrency, now);
    await Promise.all(turns.map((t) => this.judgeOne(t)));
    return turns.length;
  }

  private async judgeOne(turn: TurnRow): Promise<void> {
    try {
      const j = await this.judge.judge(judgeInputOf(turn, this.o.includeContext), { hints: this.o.hints });
      this.store.saveJudgement(turn.id, j);
      this.judged++;
    } catch (e) {
      const err = e as Error;
      const prev = this.store.judgement(turn.id)?.attempts ?? 0;
      const delay = Math.min(this.o.retryBaseMs * 2 ** prev, 10 * 60_000);
      this.store.deferJudgement(turn.id, this.judge.name, `${err.name}: ${err.message}`, Date.now() + delay);
      this.deferred++;
      if (!(err instanceof BackendUnavailable)) this.o.log(`judge: turn ${turn.id} failed (${err.message}); retrying in ${Math.round(delay / 1000)} s`);
    }
  }
}
