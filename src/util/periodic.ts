// Runs async work again and again with a pause between runs (never overlapping itself), until
// stopped; stop() waits for the run in progress. Background loops (judge, trainer) are built on it.

export class Periodic {
  private readonly work: () => Promise<unknown>;
  private readonly pauseMs: number;
  private readonly onError: (e: unknown) => void;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  /** runs in a row that threw, and the last error (see health()) */
  private failures = 0;
  private lastError: unknown = null;
  /** runs that threw since the start (for metrics and status) */
  totalFailures = 0;

  constructor(work: () => Promise<unknown>, pauseMs: number, onError: (e: unknown) => void) {
    this.work = work; this.pauseMs = pauseMs; this.onError = onError;
  }

  get active(): boolean { return !this.stopped; }

  /** null while the loop runs and its recent runs succeed; else what is wrong (for readiness checks). */
  health(maxFailures = 3): string | null {
    if (this.stopped) return 'not running';
    if (this.failures >= maxFailures) return `the last ${this.failures} runs failed (${(this.lastError as Error)?.message ?? this.lastError})`;
    return null;
  }

  start(): void {
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      this.running = this.work().then(() => { this.failures = 0; }, (e) => { this.failures++; this.totalFailures++; this.lastError = e; this.onError(e); });
      await this.running;
      if (!this.stopped) { this.timer = setTimeout(loop, this.pauseMs); this.timer.unref(); }
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
