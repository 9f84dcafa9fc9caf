// Streaming text out of a growing list of token ids, and stop-string handling.
import type { Tokenizer } from '../types.ts';

/**
 * Turns ids into text deltas as they arrive. Each step decodes a short window of recent ids so the
 * cost stays flat over long generations; a delta that ends inside an incomplete UTF-8 sequence
 * (byte-fallback tokens) is held back until the character is complete.
 */
export class IncrementalDecoder {
  private ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  private readonly tok: Tokenizer;
  /**
   * `context`: the prompt. Its last few ids open the decode window, so the first generated token
   * decodes as it does mid-text (SentencePiece drops a leading space at the start of a decode).
   */
  constructor(tok: Tokenizer, context: number[] = []) {
    this.tok = tok;
    this.ids = context.slice(-5);
    this.readOffset = this.ids.length;
  }

  push(id: number): string {
    this.ids.push(id);
    const prefix = this.tok.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const full = this.tok.decode(this.ids.slice(this.prefixOffset));
    if (full.length > prefix.length && !full.endsWith('\uFFFD')) {
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
      return full.slice(prefix.length);
    }
    return '';
  }

  /** Whatever is still held back (an incomplete character at the very end). */
  flush(): string {
    const prefix = this.tok.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const full = this.tok.decode(this.ids.slice(this.prefixOffset));
    this.prefixOffset = this.readOffset = this.ids.length;
    return full.slice(prefix.length);
  }
}

/**
 * Watches generated text for stop strings. Text that could still turn into a stop string is held
 * back, so a client never sees the start of a stop string that is later cut off.
 */
export class StopMatcher {
  private text = '';
  private emitted = 0;
  /** the stop string that ended the text, once one has */
  matched: string | null = null;
  private readonly stops: string[];
  constructor(stops: string[]) { this.stops = stops.filter((s) => s.length > 0); }

  /** Feed a delta; returns the text now safe to emit. */
  push(delta: string): string {
    if (this.matched !== null) return '';
    const from = Math.max(0, this.text.length - this.maxLen() + 1);
    this.text += delta;
    let cut = -1;
    for (const s of this.stops) {
      const i = this.text.indexOf(s, from);
      if (i >= 0 && (cut < 0 || i < cut)) { cut = i; this.matched = s; }
    }
    if (cut >= 0) {
      this.text = this.text.slice(0, cut);
      return this.take(this.text.length);
    }
    return this.take(this.text.length - this.heldBack());
  }

  /** At the end: release anything held back. */
  flush(): string { return this.take(this.text.length); }

  get fullText(): string { return this.text; }

  private take(upTo: number): string {
    if (upTo <= this.emitted) return '';
    const out = this.text.slice(this.emitted, upTo);
    this.emitted = upTo;
    return out;
  }

  private maxLen(): number { return this.stops.reduce((m, s) => Math.max(m, s.length), 0); }

  /** length of the longest suffix of the text that is a proper prefix of a stop string */
  private heldBack(): number {
    let best = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, this.text.length); n > best; n--) {
        if (this.text.endsWith(s.slice(0, n))) { best = n; break; }
      }
    }
    return best;
  }
}
