// serve-tinker's sessions: created by create_session, kept alive by any call naming them (the SDK
// heartbeats every 10 s), ended after `idleMs` without one. They are written to <data-dir>/sessions.json
// (atomically, at most once a second while they change) with the sampling clients over stored
// checkpoints, so a client keeps its session and those samplers across a server restart. Samplers
// over in-memory snapshots, training clients and futures cannot outlive the process: the server
// answers them with a clear 404. Time spent down does not count against a session's idle time.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';

export interface SessionRecord {
  id: string;
  sdkVersion: string | null;
  createdAt: number;
  lastSeen: number;
  /** sampling clients over stored checkpoints: sampler id → tinker:// path */
  samplers: Record<string, string>;
}

export interface SessionRegistryOptions {
  /** where sessions are persisted (null: memory only) */
  file: string | null;
  /** a session without a call for this long ends */
  idleMs: number;
  now?: () => number;
  log?: (line: string) => void;
}

const FILE_VERSION = 1;

export class SessionRegistry {
  private readonly o: Required<Omit<SessionRegistryOptions, 'file'>> & { file: string | null };
  private readonly sessions = new Map<string, SessionRecord>();
  /** ids that ended by idleness (kept for a clearer error) */
  private readonly ended = new Set<string>();
  private dirty = false;
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(o: SessionRegistryOptions) {
    this.o = { now: Date.now, log: () => {}, ...o };
    if (o.file && existsSync(o.file)) this.load(o.file);
  }

  private load(file: string): void {
    try {
      const j = JSON.parse(readFileSync(file, 'utf8')) as { version?: number; sessions?: SessionRecord[] };
      if (j.version !== FILE_VERSION || !Array.isArray(j.sessions)) throw new Error(`unknown format (version ${j.version})`);
      const now = this.o.now();
      for (const s of j.sessions) {
        if (typeof s?.id !== 'string') continue;
        // the server was down, not the client: idle time starts again
        this.sessions.set(s.id, { id: s.id, sdkVersion: s.sdkVersion ?? null, createdAt: s.createdAt ?? now, lastSeen: now, samplers: { ...(s.samplers ?? {}) } });
      }
      this.o.log(`tinker server: ${this.sessions.size} session(s) restored from ${file}`);
    } catch (e) {
      // a damaged file loses the sessions (clients open new ones), never the server
      this.o.log(`tinker server: ${file} could not be read (${(e as Error).message}); starting without sessions`);
      renameSync(file, `${file}.corrupt-${Date.now()}`);
    }
  }

  get size(): number { return this.sessions.size; }

  create(sdkVersion: string | null): SessionRecord {
    const now = this.o.now();
    const s: SessionRecord = { id: randomUUID(), sdkVersion, createdAt: now, lastSeen: now, samplers: {} };
    this.sessions.set(s.id, s);
    this.changed();
    return s;
  }

  /** The session, its idle clock reset; null when unknown (`endedByIdle` says whether it expired). */
  touch(id: string): SessionRecord | null {
    const s = this.sessions.get(id);
    if (!s) return null;
    s.lastSeen = this.o.now();
    return s;
  }

  endedByIdle(id: string): boolean { return this.ended.has(id); }

  /** Record a sampling client over a stored checkpoint, so it survives a restart. */
  addSampler(sessionId: string, samplerId: string, modelPath: string): void {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    s.samplers[samplerId] = modelPath;
    this.changed();
  }

  /** The stored checkpoint a persisted sampler reads, if any. */
  samplerPath(samplerId: string): string | null {
    for (const s of this.sessions.values()) if (samplerId in s.samplers) return s.samplers[samplerId];
    return null;
  }

  /** End sessions idle for longer than idleMs; returns their ids. */
  expire(): string[] {
    const cutoff = this.o.now() - this.o.idleMs, gone: string[] = [];
    for (const [id, s] of this.sessions) {
      if (s.lastSeen >= cutoff) continue;
      this.sessions.delete(id); this.ended.add(id); gone.push(id);
    }
    if (gone.length > 0) this.changed();
    return gone;
  }

  private changed(): void {
    this.dirty = true;
    if (!this.o.file || this.flushTimer) return;
    this.flushTimer = setTimeout(() => { this.flushTimer = null; this.flush(); }, 1000);
    this.flushTimer.unref();
  }

  /** Write the sessions now (atomically: a temporary file renamed over the old one). */
  flush(): void {
    if (!this.o.file || !this.dirty) return;
    this.dirty = false;
    const file = this.o.file, tmp = `${file}.tmp`;
    try {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(tmp, JSON.stringify({ version: FILE_VERSION, sessions: [...this.sessions.values()] }) + '\n');
      renameSync(tmp, file);
    } catch (e) {
      this.dirty = true;
      this.o.log(`tinker server: could not write ${file}: ${(e as Error).message}`);
    }
  }

  close(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.flush();
  }
}
