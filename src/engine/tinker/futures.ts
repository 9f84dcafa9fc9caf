// Server-side futures for the Tinker API: every compute request answers at once with a request id,
// runs in the background, and its result is fetched by long-polling retrieve_future. Training
// requests of one model run strictly in seq_id order (the protocol's ordering guarantee); a retried
// submit with the same (owner, seq_id) and the same payload gets the same request id back, a
// different payload is a conflict.
import { createHash } from 'node:crypto';

export type FutureKind = 'create_model' | 'forward_backward' | 'optim_step' | 'save_weights' | 'load_weights'
  | 'save_weights_for_sampler' | 'sample' | 'unload_model';

export type FutureOutcome =
  | { state: 'pending' }
  | { state: 'done'; value: unknown }
  | { state: 'failed'; error: string; category: 'user' | 'server' | 'unknown' };

interface Future { id: string; kind: FutureKind; outcome: FutureOutcome; waiters: (() => void)[]; finishedAt: number | null }

/** A request a client can fix: reported as category "user". */
export class UserError extends Error { override name = 'UserError'; }

export class DuplicateConflict extends Error { override name = 'DuplicateConflict'; }

/**
 * Runs tasks of one owner in seq_id order, from 1 (a training client's first seq_id); a missing
 * seq_id holds later ones back at most `gapMs`.
 */
class OrderedQueue {
  private next: number | null = 1;
  private readonly waiting = new Map<number, () => Promise<void>>();
  private running = false;
  private gapTimer: NodeJS.Timeout | null = null;
  private readonly gapMs: number;

  constructor(gapMs: number) { this.gapMs = gapMs; }

  push(seq: number, task: () => Promise<void>): void {
    this.waiting.set(seq, task);
    if (this.next === null || seq < this.next) this.next = seq;
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.next !== null && this.waiting.has(this.next)) {
        const task = this.waiting.get(this.next)!;
        this.waiting.delete(this.next);
        this.next++;
        await task();
      }
    } finally {
      this.running = false;
    }
    if (this.gapTimer) { clearTimeout(this.gapTimer); this.gapTimer = null; }
    if (this.waiting.size > 0) {
      // a seq_id never arrived (a client that skipped one): go on with the smallest waiting one
      this.gapTimer = setTimeout(() => {
        this.gapTimer = null;
        if (this.waiting.size === 0) return;
        this.next = Math.min(...this.waiting.keys());
        void this.pump();
      }, this.gapMs);
      this.gapTimer.unref();
    }
  }
}

export interface FutureStoreOptions {
  /** how long retrieve_future holds a poll before answering try_again (below the SDK's 45 s) */
  longPollMs?: number;
  /** how long a missing seq_id holds back later ones */
  seqGapMs?: number;
  /** finished futures are forgotten after this long */
  retainMs?: number;
}

export class FutureStore {
  private readonly futures = new Map<string, Future>();
  private readonly queues = new Map<string, OrderedQueue>();
  private readonly dedupe = new Map<string, { requestId: string; hash: string }>();
  private nextId = 1;
  readonly longPollMs: number;
  private readonly seqGapMs: number;
  private readonly retainMs: number;

  constructor(o: FutureStoreOptions = {}) {
    this.longPollMs = o.longPollMs ?? 25_000;
    this.seqGapMs = o.seqGapMs ?? 10_000;
    this.retainMs = o.retainMs ?? 30 * 60_000;
  }

  /**
   * Submit `run`; `order` queues it behind the owner's earlier seq ids (training requests), otherwise
   * it starts at once (sampling). `dedupeKey` + payload make a retried submit idempotent.
   */
  submit(kind: FutureKind, run: () => Promise<unknown>, o: { order?: { owner: string; seq: number }; dedupeKey?: string; payload?: unknown } = {}): string {
    if (o.dedupeKey) {
      const hash = createHash('sha256').update(JSON.stringify(o.payload ?? null)).digest('hex');
      const seen = this.dedupe.get(o.dedupeKey);
      if (seen) {
        if (seen.hash !== hash) throw new DuplicateConflict(`a different request was already submitted as ${o.dedupeKey}`);
        return seen.requestId;
      }
      this.dedupe.set(o.dedupeKey, { requestId: String(this.nextId), hash });
    }
    const f: Future = { id: String(this.nextId++), kind, outcome: { state: 'pending' }, waiters: [], finishedAt: null };
    this.futures.set(f.id, f);
    const task = async () => {
      try {
        f.outcome = { state: 'done', value: await run() };
      } catch (e) {
        const user = e instanceof UserError || (e as Error).name === 'WireError' || (e as { code?: string }).code === 'bad_request' || (e as { code?: string }).code === 'context_length_exceeded';
        f.outcome = { state: 'failed', error: (e as Error).message, category: user ? 'user' : 'server' };
      }
      f.finishedAt = Date.now();
      for (const w of f.waiters.splice(0)) w();
      this.sweep();
    };
    if (o.order) {
      let q = this.queues.get(o.order.owner);
      if (!q) { q = new OrderedQueue(this.seqGapMs); this.queues.set(o.order.owner, q); }
      q.push(o.order.seq, task);
    } else void task();
    return f.id;
  }

  has(id: string): boolean { return this.futures.has(id); }

  kindOf(id: string): FutureKind | null { return this.futures.get(id)?.kind ?? null; }

  /** The outcome, waiting up to `waitMs` for a pending one. */
  async wait(id: string, waitMs = this.longPollMs, signal?: AbortSignal): Promise<FutureOutcome | null> {
    const f = this.futures.get(id);
    if (!f) return null;
    if (f.outcome.state !== 'pending' || waitMs <= 0) return f.outcome;
    await new Promise<void>((resolve) => {
      const done = () => { clearTimeout(timer); signal?.removeEventListener('abort', done); resolve(); };
      const timer = setTimeout(done, waitMs);
      f.waiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
    return f.outcome;
  }

  private sweep(): void {
    const cutoff = Date.now() - this.retainMs;
    for (const [id, f] of this.futures) if (f.finishedAt !== null && f.finishedAt < cutoff) this.futures.delete(id);
    for (const [key, d] of this.dedupe) if (!this.futures.has(d.requestId)) this.dedupe.delete(key);
  }
}
