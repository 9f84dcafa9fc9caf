// Session lifecycle: which sessions are open, when each was last seen, and ending them — on an
// explicit done signal, after an idle timeout, or at shutdown. Only a timestamp per open session is
// kept in memory (the turns themselves are in the store), and the map is capped.
import type { Store } from '../store/store.ts';

export class SessionTracker {
  private readonly lastSeen = new Map<string, number>();
  private readonly store: Store;
  private readonly idleMs: number;
  private readonly maxOpen: number;
  private timer: NodeJS.Timeout | null = null;

  constructor(store: Store, opts: { idleMs: number; maxOpen?: number }) {
    this.store = store;
    this.idleMs = opts.idleMs;
    this.maxOpen = opts.maxOpen ?? 10_000;
    this.timer = setInterval(() => this.sweep(), Math.min(Math.max(opts.idleMs / 4, 50), 60_000));
    this.timer.unref();
  }

  get openSessions(): number { return this.lastSeen.size; }

  touch(sessionId: string): void {
    this.lastSeen.delete(sessionId); // re-insert: the map's order is least recently seen first
    this.lastSeen.set(sessionId, Date.now());
    // over the cap, the least recently seen session is forgotten here but not ended: it may still be
    // active, so its last turn keeps waiting for a next state (shutdown ends every open session)
    while (this.lastSeen.size > this.maxOpen) this.lastSeen.delete(this.lastSeen.keys().next().value!);
  }

  end(sessionId: string, reason: 'done' | 'idle' | 'shutdown'): void {
    this.lastSeen.delete(sessionId);
    this.store.endSession(sessionId, reason);
  }

  /** End sessions idle longer than the timeout. */
  sweep(now = Date.now()): void {
    for (const [id, t] of this.lastSeen) {
      if (now - t < this.idleMs) break; // the rest were seen more recently
      this.end(id, 'idle');
    }
  }

  shutdown(): void {
    if (this.timer) clearInterval(this.timer);
    for (const id of [...this.lastSeen.keys()]) this.end(id, 'shutdown');
    this.store.endOpenSessions('shutdown'); // those forgotten over the cap too
  }
}
