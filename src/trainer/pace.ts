// Training pace: bounded off-policyness for a server that learns from its own traffic.
//
// The trainer takes a batch's step while the server goes on answering. Traffic that never waits
// (agents, scripts, simulated users) outruns it: every answer then comes from a policy a growing
// number of batches behind what has already been collected, and the trainer spends the rest of
// its steps on answers of a near-base policy. For a method that learns from approvals (binary RL),
// such answers rarely hold one, so the server learns far less than the same number of
// conversations would teach it one at a time. Like asynchronous RL systems that bound how far
// generation may run ahead of training, a new main turn waits while more than `maxLagBatches`
// full batches of judged samples wait for the trainer (the one it is training included), and goes on
// when the trainer has caught up.
//
// Holding traffic only helps when the trainer can catch up soon. A backlog it cannot clear within
// `maxWaitMs` (the judge's backlog after an outage, a restart on a full store, a trainer slower than
// any traffic) is not the traffic's doing: the turn that waited that long goes on, with every turn
// waiting beside it, and the pace stands aside — no turn waits — until the backlog is back under
// the bound. A stalled trainer costs one wait of `maxWaitMs`, never one per turn.
//
// The wait is a delay before the answer's first token, never a refusal; nothing is dropped.

/**
 * serve's default: a turn waits while a full batch waits for (or is in) training — the benchmark's own loop's rhythm. Through `serve`,
 * unpaced, on stories260k-chat (dog/cat/frog/bear, 3 seeds), all three methods then ended within 3 points of the
 * benchmark's own loop on 10 of 12 method-persona pairs, each held turn waiting 0.44 s on average; at 1 the batches were
 * ~2 versions stale, anchor answers joined 75% of the steps, and binary and combine lost 11–34 points on dog, cat
 * and bear (docs/benchmarks.md, issue 12 session 23). A person who reads and types between turns rarely meets the bound.
 */
export const SERVE_MAX_LAG = 0;

export const MAX_LAG_HELP = 'bounded off-policyness: a new main turn waits while more than this many full batches of judged samples (and turns waiting for the judge) wait for the trainer, the one it is training included; 0 = the trainer never falls a batch behind; off = never wait';

/** What the pace reports (/admin/status `pace`): the bound, the turns waiting now, and those that waited so far. */
export interface PaceStatus {
  maxLagBatches: number; waiting: number; heldTurns: number; heldSeconds: number; maxHeldSeconds: number; timedOut: number;
  /** 1 while the pace stands aside */
  standingAside: number; passedTurns: number;
}

export interface PaceOptions {
  /** new turns wait while more than this many full batches wait for the trainer, the one it trains included (0: any full batch) */
  maxLagBatches: number;
  batchSize: number;
  /** the longest one turn waits (ms) */
  maxWaitMs: number;
  /** how often a waiting turn looks again when no step wakes it (ms) */
  pollMs?: number;
}

/** Whether a new turn must wait: more than maxLagBatches full batches wait for the trainer (the one in training included). */
export function mustWait(backlog: number, maxLagBatches: number, batchSize: number): boolean {
  return backlog >= (maxLagBatches + 1) * batchSize;
}

export class TrainingPace {
  readonly o: Required<PaceOptions>;
  private readonly backlog: () => number;
  private readonly waiters = new Set<() => void>();
  /** turns that waited, the total and longest waits (ms), waits that reached maxWaitMs, and turns let through while standing aside */
  readonly counts = { held: 0, heldMs: 0, maxHeldMs: 0, timedOut: 0, passed: 0 };
  /** set when a wait reached maxWaitMs: no turn waits until the backlog is back under the bound */
  private standingAside = false;
  private readonly onStandAside: (backlog: number) => void;

  /**
   * `backlog`: samples built from judged turns that wait for the trainer (and turns waiting for the judge).
   * `onStandAside`: told once each time the pace stands aside, with the backlog it could not wait out.
   */
  constructor(backlog: () => number, o: PaceOptions, onStandAside: (backlog: number) => void = () => {}) {
    if (!(Number.isInteger(o.maxLagBatches) && o.maxLagBatches >= 0)) throw new RangeError(`the training pace's lag is a whole number of batches ≥ 0, got ${o.maxLagBatches}`);
    this.backlog = backlog;
    this.o = { pollMs: 250, ...o };
    this.onStandAside = onStandAside;
  }

  get waiting(): number { return this.waiters.size; }
  /** true while the pace stands aside (a backlog the trainer could not clear in maxWaitMs) */
  get standsAside(): boolean { return this.standingAside; }

  private over(): boolean {
    const over = mustWait(this.backlog(), this.o.maxLagBatches, this.o.batchSize);
    if (!over) this.standingAside = false;
    return over;
  }

  /** Call after each training step (and whenever the backlog may have shrunk): waiting turns look again. */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves when a new main turn may be answered; the ms it waited. `signal`: the client left. */
  async wait(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted || !this.over()) return 0;
    if (this.standingAside) { this.counts.passed++; return 0; }
    const t0 = performance.now();
    this.counts.held++;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        clearInterval(poll);
        this.waiters.delete(check);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const check = () => { if (!this.over() || this.standingAside) done(); };
      const poll = setInterval(check, this.o.pollMs);
      const timer = setTimeout(() => {
        this.counts.timedOut++;
        done();
        if (!this.standingAside) {
          // the trainer could not catch up in maxWaitMs: let everyone go, and hold nobody until it has
          this.standingAside = true;
          this.onStandAside(this.backlog());
          for (const w of [...this.waiters]) w();
        }
      }, this.o.maxWaitMs);
      this.waiters.add(check);
      signal?.addEventListener('abort', done, { once: true });
    });
    const ms = performance.now() - t0;
    this.counts.heldMs += ms;
    this.counts.maxHeldMs = Math.max(this.counts.maxHeldMs, ms);
    return ms;
  }

  /** Prometheus lines: turns waiting now, turns that waited and for how long, and the waits cut short at maxWaitMs. */
  metrics(): string {
    const line = (name: string, type: string, help: string, v: number) => `# HELP openclaw_rl_pace_${name} ${help}\n# TYPE openclaw_rl_pace_${name} ${type}\nopenclaw_rl_pace_${name} ${v}\n`;
    return line('waiting', 'gauge', 'Main turns waiting for the trainer to catch up (--max-lag).', this.waiting) +
      line('held_turns_total', 'counter', 'Main turns that waited for the trainer.', this.counts.held) +
      line('held_seconds_total', 'counter', 'Seconds main turns spent waiting for the trainer.', +(this.counts.heldMs / 1000).toFixed(3)) +
      line('timed_out_total', 'counter', 'Waits that reached --max-lag-wait-seconds with the trainer still behind (the pace then stands aside).', this.counts.timedOut) +
      line('standing_aside', 'gauge', '1 while the pace stands aside: a backlog the trainer could not clear in --max-lag-wait-seconds; no turn waits until it is back under the bound.', this.standingAside ? 1 : 0) +
      line('passed_turns_total', 'counter', 'Main turns answered at once while the pace stood aside.', this.counts.passed);
  }

  status(): PaceStatus {
    return { maxLagBatches: this.o.maxLagBatches, waiting: this.waiting, heldTurns: this.counts.held, heldSeconds: +(this.counts.heldMs / 1000).toFixed(1), maxHeldSeconds: +(this.counts.maxHeldMs / 1000).toFixed(1), timedOut: this.counts.timedOut, standingAside: this.standingAside ? 1 : 0, passedTurns: this.counts.passed };
  }
}
