// The judge loop: every paired main turn is judged as soon as its next state arrives, a bounded
// number at once, and every vote is stored. It never delays serving: the request that pairs a turn
// only queues the turn's id (Store.onPaired); judging runs in the background.
//
// The store is the source of truth. The queue in memory only orders the work: a sweep every
// `sweepMs` finds what the events missed (turns left unjudged by a crash, deferred turns now due),
// and a turn is "done" only once its judgement is committed.
//
// Outages: a judge that cannot be reached (BackendUnavailable) opens a circuit: dispatching stops,
// the turns in hand go back to the front of the queue (deferred in the store, never dropped), and
// after a backoff (doubling from `retryBaseMs` up to `outageMaxMs`) one turn probes the judge. When
// it answers, the whole backlog flows again at full concurrency. A failure of one turn only (a
// malformed answer, a refused prompt) defers that turn alone with its own exponential backoff.
import type { Store, TurnRow } from '../store/store.ts';
import type { Judge } from './judge.ts';
import { BackendUnavailable } from './backends.ts';
import { looksLikeError, type JudgeInput } from './prompts.ts';
import { contentText, type WireMessage } from '../conversation/messages.ts';
import { RecentValues } from '../util/recent.ts';

export interface JudgeLoopOptions {
  /** also ask for hindsight hints (OPD) */
  hints: boolean;
  /** show the judge the conversation before the answer (upstream shows only answer and next state) */
  includeContext?: boolean;
  /** turns judged at once */
  concurrency?: number;
  /** how often the store is swept for turns the events missed (restart leftovers, deferred turns now due) */
  sweepMs?: number;
  /** first retry delay after a failure; doubles per attempt (a turn's own failures: capped at 10 minutes) */
  retryBaseMs?: number;
  /** longest wait between probes of a judge that is down */
  outageMaxMs?: number;
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

/** Delay before the next attempt after `failures` failures in a row: base·2^(failures−1), capped. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), maxMs);
}

type Outcome = 'judged' | 'unavailable' | 'failed' | 'gone';

export class JudgeLoop {
  private readonly store: Store;
  private readonly judge: Judge;
  private readonly o: Required<Omit<JudgeLoopOptions, 'log' | 'warn'>> & { log: (line: string) => void; warn: (line: string) => void };
  judged = 0;
  deferred = 0;
  /** failed judge calls since the start, and in a row now */
  failures = 0;
  consecutiveFailures = 0;
  /** the last failure, until the judge answers again */
  lastError: { message: string; at: number } | null = null;
  /** pairing → committed judgement, for the turns judged recently */
  readonly lag = new RecentValues();
  private lastWarnAt = 0;
  /** turn ids waiting, oldest pairing first, and when each was paired */
  private readonly queue: number[] = [];
  private readonly pairedAt = new Map<number, number>();
  /** every turn id queued or being judged (the sweep skips them) */
  private readonly known = new Set<number>();
  private inFlight = 0;
  private running = false;
  private unsubscribe: (() => void) | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private wakeTimer: NodeJS.Timeout | null = null;
  /** the outage circuit: null = closed; else when the next probe may go, and whether one is out */
  private outage: { until: number; probing: boolean; streak: number } | null = null;
  private sweepFailures = 0;
  private lastSweepError: unknown = null;
  /** resolves when nothing is in flight (stop() waits for it) */
  private idle: { promise: Promise<void>; resolve: () => void } | null = null;

  constructor(store: Store, judge: Judge, o: JudgeLoopOptions) {
    this.store = store;
    this.judge = judge;
    this.o = {
      includeContext: false, concurrency: 4, sweepMs: 2000, retryBaseMs: 1000, outageMaxMs: 15_000,
      log: () => {}, warn: o.log ?? (() => {}), ...o,
    };
  }

  /** Judge turns as they are paired, from now until stop(). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.store.onPaired((id) => this.enqueue(id, Date.now()));
    const sweep = () => {
      if (!this.running) return;
      this.sweep();
      this.sweepTimer = setTimeout(sweep, this.o.sweepMs);
      this.sweepTimer.unref();
    };
    sweep();
  }

  /** Stop taking new turns and wait for those being judged (turns still queued stay in the store, unjudged). */
  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.sweepTimer = this.wakeTimer = null;
    if (this.inFlight > 0) {
      this.idle ??= Promise.withResolvers<void>();
      await this.idle.promise;
    }
    this.queue.length = 0;
    this.known.clear();
    this.pairedAt.clear();
  }

  /** null while the loop runs and its store sweeps succeed; else what is wrong (for readiness checks). */
  health(): string | null {
    if (!this.running) return 'not running';
    if (this.sweepFailures >= 3) return `the last ${this.sweepFailures} sweeps of the store failed (${(this.lastSweepError as Error)?.message ?? this.lastSweepError})`;
    return null;
  }

  /**
   * Judge everything due now (for callers that drive the loop themselves: tests, benchmarks),
   * `concurrency` at a time; returns how many turns were tried. Not for use while start()ed.
   */
  async tick(now = Date.now()): Promise<number> {
    const turns = this.store.turnsToJudge(1_000_000, now).filter((t) => !this.known.has(t.id));
    let next = 0;
    const worker = async () => { while (next < turns.length) await this.judgeOne(turns[next++]); };
    await Promise.all(Array.from({ length: Math.min(this.o.concurrency, turns.length) }, worker));
    return turns.length;
  }

  /** true while the judge is unreachable (the outage circuit is open) */
  get inOutage(): boolean { return this.outage !== null; }

  /** Turns paired but not yet judged (queued or in flight) here, and the age of the oldest (ms). */
  backlog(now = Date.now()): { waiting: number; inFlight: number; oldestMs: number | null } {
    let oldest = Infinity;
    for (const id of this.known) oldest = Math.min(oldest, this.pairedAt.get(id) ?? Infinity);
    return { waiting: this.queue.length, inFlight: this.inFlight, oldestMs: Number.isFinite(oldest) ? now - oldest : null };
  }

  private enqueue(id: number, pairedAt: number, front = false): void {
    if (!this.running || this.known.has(id)) return;
    this.known.add(id);
    this.pairedAt.set(id, pairedAt);
    if (front) this.queue.unshift(id); else this.queue.push(id);
    // never inside the caller (a request handler): dispatch on the next turn of the event loop
    setImmediate(() => this.pump());
  }

  /** The store is the source of truth: queue what is due there and not here yet. */
  private sweep(): void {
    try {
      const due = this.store.turnsToJudge(4096, Date.now());
      for (const t of due) if (!this.known.has(t.id)) this.enqueue(t.id, this.store.pairedAt(t.id) ?? t.created_at);
      this.sweepFailures = 0;
    } catch (e) {
      this.sweepFailures++;
      this.lastSweepError = e;
      this.o.log(`judge loop: sweeping the store failed: ${(e as Error).message}`);
    }
  }

  /** Start as many queued turns as the concurrency and the outage circuit allow. */
  private pump(): void {
    if (!this.running) return;
    while (this.queue.length > 0 && this.inFlight < this.o.concurrency) {
      const now = Date.now();
      if (this.outage) {
        if (this.outage.probing) return;
        if (now < this.outage.until) { this.wakeAt(this.outage.until); return; }
        this.outage.probing = true; // one turn asks whether the judge is back
      }
      const id = this.queue.shift()!;
      this.inFlight++;
      void this.dispatch(id).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0 && this.idle) { this.idle.resolve(); this.idle = null; }
        this.pump();
      });
    }
  }

  private wakeAt(at: number): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => { this.wakeTimer = null; this.pump(); }, Math.max(0, at - Date.now()));
    this.wakeTimer.unref();
  }

  private async dispatch(id: number): Promise<void> {
    let outcome: Outcome = 'gone';
    try {
      const turn = this.store.turn(id);
      const due = turn && turn.next_state_status === 'paired' && this.store.judgement(id)?.status !== 'done';
      if (due) outcome = await this.judgeOne(turn);
    } catch (e) {
      outcome = 'failed';
      this.o.log(`judge loop: turn ${id}: ${(e as Error).message}`);
    }
    if (outcome === 'unavailable' && this.running) {
      // keep it in hand, first in line for when the judge is back
      this.known.delete(id);
      this.enqueue(id, this.pairedAt.get(id) ?? Date.now(), true);
      return;
    }
    if (outcome === 'judged' && this.outage) { this.outage = null; }
    if (outcome !== 'judged' && this.outage?.probing) this.outage.probing = false;
    this.known.delete(id);
    this.pairedAt.delete(id);
  }

  private async judgeOne(turn: TurnRow): Promise<Outcome> {
    try {
      const j = await this.judge.judge(judgeInputOf(turn, this.o.includeContext), { hints: this.o.hints });
      this.store.saveJudgement(turn.id, j);
      this.judged++;
      const pairedAt = this.pairedAt.get(turn.id) ?? this.store.pairedAt(turn.id);
      if (pairedAt !== null) this.lag.add(Date.now() - pairedAt);
      if (this.consecutiveFailures > 0) this.o.log(`judge: answering again after ${this.consecutiveFailures} failed call(s)`);
      this.consecutiveFailures = 0;
      this.lastError = null;
      return 'judged';
    } catch (e) {
      const err = e as Error;
      const now = Date.now();
      let delay: number;
      if (err instanceof BackendUnavailable) {
        // the judge is down, not this turn: one backoff for all, then a probe
        const streak = (this.outage?.streak ?? 0) + 1;
        delay = backoffMs(streak, this.o.retryBaseMs, this.o.outageMaxMs);
        if (!this.outage || this.outage.probing || now >= this.outage.until) this.outage = { until: now + delay, probing: false, streak };
        delay = this.outage.until - now;
      } else {
        const attempts = this.store.judgement(turn.id)?.attempts ?? 0;
        delay = backoffMs(attempts + 1, this.o.retryBaseMs, 10 * 60_000);
      }
      this.store.deferJudgement(turn.id, this.judge.name, `${err.name}: ${err.message}`, now + delay);
      this.deferred++;
      const unavailable = err instanceof BackendUnavailable;
      this.failed(`${unavailable ? 'unreachable' : 'failed'}: ${err.message}`,
        unavailable ? `turns wait (none dropped); the judge is asked again in ${Math.round(delay / 1000)} s` : `turn ${turn.id} waits and is retried in ${Math.round(delay / 1000)} s`);
      return unavailable ? 'unavailable' : 'failed';
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
    const b = this.backlog();
    const lag = this.lag.summary();
    return {
      judged: this.judged, deferred: this.deferred, failures: this.failures, consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError?.message ?? null, lastErrorAt: this.lastError ? new Date(this.lastError.at).toISOString() : null,
      backlog: b.waiting + b.inFlight, oldestWaitingSeconds: b.oldestMs === null ? null : b.oldestMs / 1000, outage: this.outage !== null,
      lagSeconds: lag && { p50: lag.p50 / 1000, p99: lag.p99 / 1000, max: lag.max / 1000, count: lag.count },
    };
  }

  /** Prometheus lines: judged turns, failed judge calls, the backlog and the judge lag. */
  metrics(): string {
    const b = this.backlog();
    const lag = this.lag.summary();
    const secs = (ms: number | undefined | null) => (ms === undefined || ms === null ? 'NaN' : String(ms / 1000));
    return '# HELP openclaw_rl_judge_judged_total Turns judged.\n# TYPE openclaw_rl_judge_judged_total counter\n' +
      `openclaw_rl_judge_judged_total ${this.judged}\n` +
      '# HELP openclaw_rl_judge_failures_total Judge calls that failed (the turn waits and is retried).\n# TYPE openclaw_rl_judge_failures_total counter\n' +
      `openclaw_rl_judge_failures_total ${this.failures}\n` +
      '# HELP openclaw_rl_judge_backlog Paired turns waiting for the judge or being judged.\n# TYPE openclaw_rl_judge_backlog gauge\n' +
      `openclaw_rl_judge_backlog ${b.waiting + b.inFlight}\n` +
      '# HELP openclaw_rl_judge_oldest_waiting_seconds Age of the oldest paired turn not judged yet.\n# TYPE openclaw_rl_judge_oldest_waiting_seconds gauge\n' +
      `openclaw_rl_judge_oldest_waiting_seconds ${secs(b.oldestMs)}\n` +
      '# HELP openclaw_rl_judge_outage 1 while the judge is unreachable (turns wait; one probes it after a backoff).\n# TYPE openclaw_rl_judge_outage gauge\n' +
      `openclaw_rl_judge_outage ${this.outage ? 1 : 0}\n` +
      '# HELP openclaw_rl_judge_lag_seconds From a turn\'s next state to its stored judgement, over the last turns judged.\n# TYPE openclaw_rl_judge_lag_seconds summary\n' +
      `openclaw_rl_judge_lag_seconds{quantile="0.5"} ${secs(lag?.p50)}\nopenclaw_rl_judge_lag_seconds{quantile="0.99"} ${secs(lag?.p99)}\n` +
      `openclaw_rl_judge_lag_seconds_sum ${secs(lag?.sum ?? 0)}\nopenclaw_rl_judge_lag_seconds_count ${lag?.count ?? 0}\n`;
  }
}
