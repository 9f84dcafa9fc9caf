// Runs async work again and again with a pause between runs (never overlapping itself), until
// stopped; stop() waits for the run in progress. Background loops (judge, trainer) are built on it.

export class Periodic {
  private readonly work: () => Promise<unknown>;
  private readonly pauseMs: number;
  private readonly onError: (e: unknown) => void;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;

  constructor(work: () => Promise<unknown>, pauseMs: number, onError: (e: unknown) => void) {
    this.work = work; this.pauseMs = pauseMs; this.onError = onError;
  }

  get active(): boolean { return !this.stopped; }

  start(): void {
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      this.running = this.work().then(() => undefined, this.onError);
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
