// Training pace: bounded off-policyness for a server that learns from its own traffic.
//
// The trainer takes a batch's step while the server goes on answering. Traffic that never waits
// (agents, scripts, simulated users) outruns it: every answer then comes from a policy a growing
// number of batches behind what has already been collected, and the trainer spends the rest of
// its steps on answers of a near-base policy. For a method that learns from approvals (binary RL),
// such answers rarely hold one, so the server learns far less than the same number of
// conversations would teach it one at a time. Like asynchronous RL systems that bound how far
// generation may run ahead of training, a new main turn waits while more than `maxLagBatches`
// full batches of judged samples wait for the trainer beyond the one it is training, and goes on when the trainer has caught up,
// or after `maxWaitMs` at most: a stalled or paused trainer delays answers, never stops them.
//
// The wait is a delay before the answer's first token, never a refusal; nothing is dropped.

/**
 * serve's default: the trainer may fall one batch behind the one it trains. Through `serve`, unpaced, binary RL went
 * from +45–91 points (dog/cat/frog/bear, without a bound) to within a few points of the benchmark's own loop, with each
 * waiting turn held ~0.5 s on average (docs/benchmarks.md, issue 12 session 23). 0 was no better; a person who reads
 * and types between turns never meets the bound.
 */
export const SERVE_MAX_LAG = 1;

export const MAX_LAG_HELP = 'bounded off-policyness: a new main turn waits (at most --max-lag-wait-seconds) while more than this many full batches of judged samples wait for the trainer beyond the one it trains; 0 = the trainer never falls a batch behind; off = never wait';

export interface PaceOptions {
  /** full batches of samples that may wait for the trainer beyond the one it trains before new turns wait (0: none) */
  maxLagBatches: number;
  batchSize: number;
  /** the longest one turn waits (ms) */
  maxWaitMs: number;
  /** how often a waiting turn looks again when no step wakes it (ms) */
  pollMs?: number;
}

/** Whether a new turn must wait: more than maxLagBatches full batches wait for the trainer. */
export function mustWait(backlog: number, maxLagBatches: number, batchSize: number): boolean {
  return backlog >= (maxLagBatches + 1) * batchSize;
}

export class TrainingPace {
  readonly o: Required<PaceOptions>;
  private readonly backlog: () => number;
  private readonly waiters = new Set<() => void>();
  /** turns that waited, the total and longest waits (ms), and the turns that went on at maxWaitMs */
  readonly counts = { held: 0, heldMs: 0, maxHeldMs: 0, timedOut: 0 };

  /** `backlog`: samples built from judged turns that wait for the trainer */
  constructor(backlog: () => number, o: PaceOptions) {
    if (!(Number.isInteger(o.maxLagBatches) && o.maxLagBatches >= 0)) throw new RangeError(`the training pace's lag is a whole number of batches ≥ 0, got ${o.maxLagBatches}`);
    this.backlog = backlog;
    this.o = { pollMs: 250, ...o };
  }

  get waiting(): number { return this.waiters.size; }

  /** Call after each training step (and whenever the backlog may have shrunk): waiting turns look again. */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves when a new main turn may be answered; the ms it waited. `signal`: the client left. */
  async wait(signal?: AbortSignal): Promise<number> {
    if (!mustWait(this.backlog(), this.o.maxLagBatches, this.o.batchSize)) return 0;
    const t0 = performance.now();
    this.counts.held++;
    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const done = (timedOut: boolean) => {
        if (timer) clearTimeout(timer);
        clearInterval(poll);
        this.waiters.delete(check);
        signal?.removeEventListener('abort', leave);
        if (timedOut) this.counts.timedOut++;
        resolve();
      };
      const check = () => { if (!mustWait(this.backlog(), this.o.maxLagBatches, this.o.batchSize)) done(false); };
      const leave = () => done(false);
      const poll = setInterval(check, this.o.pollMs);
      timer = setTimeout(() => done(true), this.o.maxWaitMs);
      this.waiters.add(check);
      signal?.addEventListener('abort', leave, { once: true });
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
      line('timed_out_total', 'counter', 'Waits that ended at --max-lag-wait-seconds with the trainer still behind.', this.counts.timedOut);
  }

  status(): Record<string, number> {
    return { maxLagBatches: this.o.maxLagBatches, waiting: this.waiting, heldTurns: this.counts.held, heldSeconds: +(this.counts.heldMs / 1000).toFixed(1), maxHeldSeconds: +(this.counts.maxHeldMs / 1000).toFixed(1), timedOut: this.counts.timedOut };
  }
}
