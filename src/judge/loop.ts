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
  /** judge failures: the first of a run at once, then at most one line a minute (with the count) */
  warn?: (line: string) => void;
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
  private readonly o: Required<Omit<JudgeLoopOptions, 'log' | 'warn'>> & { log: (line: string) => void; warn: (line: string) => void };
  private readonly periodic: Periodic;
  judged = 0;
  deferred = 0;
  /** failed judge calls since the start, and in a row now */
  failures = 0;
  consecutiveFailures = 0;
  /** the last failure, until the judge answers again */
  lastError: { message: string; at: number } | null = null;
  private lastWarnAt = 0;

  constructor(store: Store, judge: Judge, o: JudgeLoopOptions) {
    this.store = store;
    this.judge = judge;
    this.o = { includeContext: false, pollMs: 500, concurrency: 2, retryBaseMs: 2000, log: () => {}, warn: o.log ?? (() => {}), ...o };
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
      if (this.consecutiveFailures > 0) this.o.log(`judge: answering again after ${this.consecutiveFailures} failed call(s)`);
      this.consecutiveFailures = 0;
      this.lastError = null;
    } catch (e) {
      const err = e as Error;
      const prev = this.store.judgement(turn.id)?.attempts ?? 0;
      const delay = Math.min(this.o.retryBaseMs * 2 ** prev, 10 * 60_000);
      this.store.deferJudgement(turn.id, this.judge.name, `${err.name}: ${err.message}`, Date.now() + delay);
      this.deferred++;
      this.failed(`${err instanceof BackendUnavailable ? 'unreachable' : 'failed'}: ${err.message}`, `turn ${turn.id} waits and is retried in ${Math.round(delay / 1000)} s`);
    }
  }

  /** Counts a failure and warns: the first of a run at once, then at most once a minute. */
  failed(message: string, consequence: string): void {
    this.failures++;
    this.consecutiveFailures++;
    this.lastError = { message, at: Date.now() };
    if (this.consecutiveFailures === 1 || Date.now() - this.lastWarnAt >= 60_000) {
      this.lastWarnAt = Date.now();
      this.o.warn(`judge ${this.judge.name} ${message} (${this.consecutiveFailures} failure(s) in a row, ${this.failures} in all); ${consequence}`);
    }
  }

  status(): Record<string, unknown> {
    return {
      judged: this.judged, deferred: this.deferred, failures: this.failures, consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError?.message ?? null, lastErrorAt: this.lastError ? new Date(this.lastError.at).toISOString() : null,
    };
  }

  /** Prometheus lines: judged turns and failed judge calls. */
  metrics(): string {
    return '# HELP openclaw_rl_judge_judged_total Turns judged.\n# TYPE openclaw_rl_judge_judged_total counter\n' +
      `openclaw_rl_judge_judged_total ${this.judged}\n` +
      '# HELP openclaw_rl_judge_failures_total Judge calls that failed (the turn waits and is retried).\n# TYPE openclaw_rl_judge_failures_total counter\n' +
      `openclaw_rl_judge_failures_total ${this.failures}\n`;
  }
}
