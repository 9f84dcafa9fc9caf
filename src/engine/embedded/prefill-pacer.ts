// How much prompt work (prefill rows, scoring rows) the scheduler may add to a step while other
// sequences decode. A step that carries prompt rows costs the decoders its extra time, so prompt
// work is paid from a time credit: every step earns decodeMs · (1 − share) / share milliseconds,
// and the measured extra time of each step (or background scoring pass) is spent from it. Decoders
// therefore keep about `share` of their idle speed however long or expensive the prompt is: when
// even one row at a long position costs more than a step earns (attention over 10K positions),
// rows run every few steps instead of every step. With nothing decoding, prompts take full chunks.
// Costs are learnt from the steps themselves (moving averages), so no model-specific tuning.

export interface PacerOptions {
  /** largest number of rows in one step */
  maxChunk: number;
  /** share of idle decode speed kept while prompts are being fed (0 < share < 1) */
  decodeShare: number;
}

export interface PacerState { decodeMs: number; rowMs: number; creditMs: number }

const ema = (old: number, x: number, w = 0.3) => (old === 0 ? x : (1 - w) * old + w * x);

export class PrefillPacer {
  readonly maxChunk: number;
  readonly decodeShare: number;
  /** moving average of a decode-only step */
  private decodeMs = 0;
  /** moving average of the extra time one prompt row adds to a step */
  private rowMs = 0;
  /** prompt work allowed now (ms), while sequences decode */
  private creditMs = 0;

  constructor(o: PacerOptions) {
    if (!(o.decodeShare > 0 && o.decodeShare < 1)) throw new RangeError(`decodeShare must be between 0 and 1 (got ${o.decodeShare})`);
    this.maxChunk = Math.max(1, Math.floor(o.maxChunk));
    this.decodeShare = o.decodeShare;
  }

  /** Prompt time a step earns while sequences decode. */
  private get allowanceMs(): number { return this.decodeMs * (1 - this.decodeShare) / this.decodeShare; }

  /** Rows of prompt work to run in the next step (0: decode only this time). */
  rows(decoding: boolean): number {
    if (!decoding) return this.maxChunk;
    if (this.decodeMs === 0) return 0; // learn what a decode step costs first
    if (this.rowMs === 0) return 1; // then what a row adds, with the smallest step
    return Math.max(0, Math.min(this.maxChunk, Math.floor(this.creditMs / this.rowMs)));
  }

  /** The rows a step would take with a full credit (for stats: the typical chunk while decoding). */
  typicalRows(): number {
    if (this.decodeMs === 0 || this.rowMs === 0) return 1;
    return Math.max(0, Math.min(this.maxChunk, Math.floor(this.allowanceMs / this.rowMs)));
  }

  /** A sampling step ran `ms` with `decoders` decode rows and `rows` prompt rows. */
  step(ms: number, decoders: number, rows: number): void {
    if (decoders === 0) {
      // nobody waits: nothing to pay; a first cost estimate for the rows
      if (rows > 0 && this.rowMs === 0) this.rowMs = ms / rows;
      this.creditMs = 0;
      return;
    }
    if (rows === 0) this.decodeMs = ema(this.decodeMs, ms);
    else {
      const extra = Math.max(0, ms - this.decodeMs);
      this.rowMs = ema(this.rowMs, extra / rows, 0.5);
      this.creditMs -= extra;
    }
    this.earn();
  }

  /** Background prompt work (a scoring pass) ran `ms` while sequences decoded: paid from the same credit. */
  background(ms: number): void { this.creditMs -= ms; }

  private earn(): void {
    // earned credit is capped, so a long decode-only stretch does not buy one huge step later
    const cap = Math.max(4 * this.allowanceMs, 2 * this.rowMs);
    this.creditMs = Math.min(cap, this.creditMs + this.allowanceMs);
  }

  state(): PacerState { return { decodeMs: this.decodeMs, rowMs: this.rowMs, creditMs: this.creditMs }; }
}

/**
 * How many rows one background step takes (a scoring pass through the worker, or a low-priority
 * prompt's share of a step). A user request that arrives meanwhile waits for the step in progress,
 * so a step is sized by time, not rows: its cost per row is learnt from the background steps
 * themselves (a row at 10K positions of Qwen3-0.6B costs ~30 ms on 2 cores, of a tiny model well
 * under 1 ms), and a step takes what fits in `targetMs`, between 1 and `maxRows` rows.
 */
export class BackgroundStep {
  readonly targetMs: number;
  readonly maxRows: number;
  /** moving average of a background step's time per row */
  private rowMs = 0;

  constructor(targetMs: number, maxRows: number) {
    if (!(targetMs > 0) || !(maxRows >= 1)) throw new RangeError(`bad background step limits: ${targetMs} ms, ${maxRows} rows`);
    this.targetMs = targetMs;
    this.maxRows = Math.floor(maxRows);
  }

  /** Rows for the next background step. */
  rows(): number {
    if (this.rowMs === 0) return this.maxRows;
    return Math.max(1, Math.min(this.maxRows, Math.floor(this.targetMs / this.rowMs)));
  }

  /** A background step of `rows` rows took `ms`. */
  ran(ms: number, rows: number): void {
    if (rows > 0 && ms >= 0) this.rowMs = ema(this.rowMs, ms / rows, 0.5);
  }
}
