// Admission control: at most `limit` requests run at once; the next ones wait in a short, bounded
// queue (first come, first served) for up to `waitMs`, and only a request that finds the queue full
// or waits too long is turned away (429). Bursts of agent traffic are queued, not refused.

export class Admission {
  readonly limit: number;
  readonly maxQueue: number;
  readonly waitMs: number;
  private running = 0;
  private readonly queue: { admit: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(limit: number, opts: { maxQueue?: number; waitMs?: number } = {}) {
    this.limit = limit;
    this.maxQueue = opts.maxQueue ?? limit * 4;
    this.waitMs = opts.waitMs ?? 10_000;
  }

  get inFlight(): number { return this.running; }
  get waiting(): number { return this.queue.length; }

  /** Resolves true once the request may run (call release() when it ends), false when it must be refused. */
  acquire(): Promise<boolean> {
    if (this.running < this.limit && this.queue.length === 0) { this.running++; return Promise.resolve(true); }
    if (this.queue.length >= this.maxQueue) return Promise.resolve(false);
    return new Promise((resolve) => {
      const entry = {
        admit: () => { clearTimeout(entry.timer); this.running++; resolve(true); },
        timer: setTimeout(() => { this.queue.splice(this.queue.indexOf(entry), 1); resolve(false); }, this.waitMs),
      };
      this.queue.push(entry);
    });
  }

  release(): void {
    this.running--;
    const next = this.queue.shift();
    if (next) next.admit();
  }
}
