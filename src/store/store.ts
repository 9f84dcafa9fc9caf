// The durable store: SQLite in WAL mode under the data folder, plus append-only JSONL logs.
// A turn is written when its request starts (status in_progress, with the exact prompt ids) and
// completed in one transaction when it ends; a turn found in_progress at startup belonged to a
// process that died mid-request and is marked aborted, so it is never trained on.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS } from './schema.ts';
import { JsonlLog } from './jsonl.ts';
import { redactDeep } from './redact.ts';
import { EncryptedIds, PLAIN_IDS, loadOrCreateKey, type IdsCodec } from './ids-cipher.ts';

export type TurnStatus = 'in_progress' | 'complete' | 'aborted' | 'error';
export type NextStateStatus = 'pending' | 'paired' | 'unpaired' | 'none';

export interface TurnStart {
  sessionId: string;
  idSource: string;
  turnType: 'main' | 'side';
  typeSource: string;
  request: unknown;
  promptIds: number[];
  policyVersion: number;
}

export interface TurnEnd {
  status: Exclude<TurnStatus, 'in_progress'>;
  responseIds: number[];
  responseLogprobs: number[];
  responseText: string;
  /** the assistant message as the client received it */
  answer: { content: string; reasoning: string | null; toolCalls: { name: string; arguments: string }[] };
  finishReason: string;
  policyVersion: number;
  queuedMs?: number;
  firstTokenMs?: number;
  totalMs?: number;
}

export interface TurnRow {
  id: number; session_id: string; idx: number; turn_type: string; type_source: string; status: TurnStatus;
  request_json: string; prompt_ids: string; response_ids: string; response_logprobs: string; response_text: string; answer_json: string | null;
  finish_reason: string; policy_version: number; prompt_tokens: number; completion_tokens: number;
  next_state_json: string | null; next_state_status: NextStateStatus; next_state_reason: string | null; created_at: number;
}

/**
 * What is redacted (see docs/security.md): 'off' nothing; 'logs' the JSONL logs and exports (their
 * text redacted, token ids left out); 'all' also the store's text columns, with the token ids the
 * trainer needs encrypted at rest under a key file kept outside the data folder.
 */
export type RedactMode = 'off' | 'logs' | 'all';

export interface StoreOptions {
  /** default 'logs' (the CLI's serve defaults to 'all'); true = 'logs', false = 'off' */
  redact?: boolean | RedactMode;
  /** the key for token ids at rest (default: `<data folder>.key`, beside the folder, created on first use) */
  keyFile?: string;
  retentionDays?: number;
}

export class Store {
  readonly dir: string;
  readonly db: DatabaseSync;
  readonly conversations: JsonlLog;
  readonly judgementsLog: JsonlLog;
  /** turns found in progress at startup and marked aborted */
  readonly recoveredAborted: number;
  readonly redaction: RedactMode;
  /** how token ids are written and read (encrypted under --redact all) */
  private readonly ids: IdsCodec;

  constructor(dir: string, opts: StoreOptions = {}) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
    this.db = new DatabaseSync(join(dir, 'openclaw-rl.sqlite'));
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;');
    this.migrate();
    this.redaction = opts.redact === false ? 'off' : opts.redact === true || opts.redact === undefined ? 'logs' : opts.redact;
    const keyFile = opts.keyFile ?? `${dir.replace(/\/+$/, '')}.key`;
    if (this.redaction === 'all') this.ids = new EncryptedIds(loadOrCreateKey(keyFile));
    else if (existsSync(keyFile)) { const enc = new EncryptedIds(loadOrCreateKey(keyFile)); this.ids = { encode: PLAIN_IDS.encode, decode: (t) => enc.decode(t) }; }
    else this.ids = PLAIN_IDS;
    // records are redacted as objects before they are written (see logged())
    this.conversations = new JsonlLog(join(dir, 'conversations.jsonl'));
    this.judgementsLog = new JsonlLog(join(dir, 'judgements.jsonl'));
    this.recoveredAborted = Number(this.db.prepare(`UPDATE turns SET status = 'aborted', finish_reason = 'abort' WHERE status = 'in_progress'`).run().changes);
    if (opts.retentionDays && opts.retentionDays > 0) this.deleteOlderThan(Date.now() - opts.retentionDays * 86_400_000);
  }

  private readonly statements = new Map<string, StatementSync>();

  /** A value as the store's text columns keep it: redacted under --redact all. */
  stored<T>(value: T): T { return this.redaction === 'all' ? redactDeep(value) : value; }

  /** A record as the JSONL logs and exports keep it: redacted unless --redact off. */
  logged<T>(value: T): T { return this.redaction === 'off' ? value : redactDeep(value); }

  /** Token ids from a turn's prompt_ids / response_ids column (decrypted when stored encrypted). */
  decodeIds(text: string): number[] { return this.ids.decode(text); }

  /** Whether logs and exports may carry token ids (they decode to the text, secrets included). */
  get idsInLogs(): boolean { return this.redaction === 'off'; }

  /** A prepared statement, prepared once per store (callers outside the store use it too). */
  sql(text: string): StatementSync {
    let st = this.statements.get(text);
    if (!st) { st = this.db.prepare(text); this.statements.set(text, st); }
    return st;
  }

  private migrate(): void {
    const version = Number((this.db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version);
    if (version > MIGRATIONS.length) throw new Error(`the store in ${this.dir} has schema version ${version}, newer than this openclaw-rl (${MIGRATIONS.length}); upgrade openclaw-rl`);
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.transaction(() => {
        this.db.exec(MIGRATIONS[v]);
        this.db.exec(`PRAGMA user_version = ${v + 1}`);
      });
    }
  }

  transaction<T>(f: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const r = f();
      this.db.exec('COMMIT');
      return r;
    } catch (e) {
      // SQLite may already have rolled back (a full disk does that): a second ROLLBACK's own error
      // ("no transaction is active") must not hide the real one
      try { this.db.exec('ROLLBACK'); } catch { /* already rolled back */ }
      throw e;
    }
  }

  /** Record the start of a turn; returns its id. */
  beginTurn(t: TurnStart): number {
    const now = Date.now();
    return this.transaction(() => {
      this.sql(`INSERT INTO sessions (id, id_source, created_at, last_seen_at) VALUES (?, ?, ?, ?)
                       ON CONFLICT(id) DO UPDATE SET last_seen_at = excluded.last_seen_at, ended_at = NULL, end_reason = NULL`)
        .run(t.sessionId, t.idSource, now, now);
      const idx = t.turnType === 'main'
        ? Number((this.sql(`SELECT COUNT(*) AS n FROM turns WHERE session_id = ? AND turn_type = 'main'`).get(t.sessionId) as { n: number }).n)
        : -1;
      const r = this.sql(`INSERT INTO turns (session_id, idx, turn_type, type_source, status, request_json, prompt_ids, response_ids,
          response_logprobs, response_text, finish_reason, policy_version, prompt_tokens, completion_tokens, next_state_status, created_at)
          VALUES (?, ?, ?, ?, 'in_progress', ?, ?, '[]', '[]', '', '', ?, ?, 0, ?, ?)`)
        .run(t.sessionId, idx, t.turnType, t.typeSource, JSON.stringify(this.stored(t.request)), this.ids.encode(t.promptIds), t.policyVersion, t.promptIds.length,
          t.turnType === 'main' ? 'pending' : 'none', now);
      return Number(r.lastInsertRowid);
    });
  }

  /**
   * Complete a turn (one transaction), then log it — with its start record when the caller has it,
   * or later through logTurn when `log` is false (the log may follow the response; the commit may not).
   */
  finishTurn(id: number, e: TurnEnd, start?: TurnStart, log = true): void {
    this.transaction(() => {
      this.sql(`UPDATE turns SET status = ?, response_ids = ?, response_logprobs = ?, response_text = ?, answer_json = ?, finish_reason = ?,
          policy_version = ?, completion_tokens = ?, queued_ms = ?, first_token_ms = ?, total_ms = ?,
          next_state_status = CASE WHEN turn_type = 'main' AND ? = 'complete' THEN next_state_status ELSE 'none' END,
          next_state_reason = CASE WHEN turn_type = 'main' AND ? != 'complete' THEN 'turn ' || ? ELSE next_state_reason END
          WHERE id = ?`)
        .run(e.status, this.ids.encode(e.responseIds), JSON.stringify(e.responseLogprobs), this.stored(e.responseText), JSON.stringify(this.stored(e.answer)), e.finishReason, e.policyVersion,
          e.responseIds.length, e.queuedMs ?? null, e.firstTokenMs ?? null, e.totalMs ?? null, e.status, e.status, e.status, id);
    });
    if (log) this.logTurn(id, e, start);
  }

  /** Append a finished turn to conversations.jsonl (redacted, and without token ids, unless --redact off). */
  logTurn(id: number, e: TurnEnd, start?: TurnStart): void {
    if (start) {
      this.appendLog(this.conversations, this.logged({
        event: 'turn', id, sessionId: start.sessionId, turnType: start.turnType, typeSource: start.typeSource, status: e.status,
        request: start.request, ...(this.idsInLogs ? { promptIds: start.promptIds, responseIds: e.responseIds } : {}),
        promptTokens: start.promptIds.length, completionTokens: e.responseIds.length, responseLogprobs: e.responseLogprobs,
        responseText: e.responseText, answer: e.answer, finishReason: e.finishReason, policyVersion: e.policyVersion, createdAt: new Date().toISOString(),
      }));
    } else {
      const row = this.turn(id);
      if (row) this.appendLog(this.conversations, this.logged({ event: 'turn', ...rowForLog(row, this.idsInLogs ? this : null) }));
    }
  }

  turn(id: number): TurnRow | undefined {
    return this.sql('SELECT * FROM turns WHERE id = ?').get(id) as TurnRow | undefined;
  }

  /** The session's latest main turn. */
  lastMainTurn(sessionId: string): TurnRow | undefined {
    return this.sql(`SELECT * FROM turns WHERE session_id = ? AND turn_type = 'main' ORDER BY idx DESC LIMIT 1`).get(sessionId) as TurnRow | undefined;
  }

  setNextState(turnId: number, status: NextStateStatus, nextState: unknown, reason: string | null): void {
    this.sql('UPDATE turns SET next_state_status = ?, next_state_json = ?, next_state_reason = ? WHERE id = ?')
      .run(status, nextState === null ? null : JSON.stringify(this.stored(nextState)), this.stored(reason), turnId);
    this.appendLog(this.conversations, this.logged({ event: 'next_state', turnId, status, reason, nextState }));
    if (status === 'paired') for (const listener of this.pairedListeners) listener(turnId);
  }

  private readonly pairedListeners = new Set<(turnId: number) => void>();

  /**
   * Be told when a turn gets its next state (after it is committed), so it can be judged at once
   * instead of at the next poll. The listener runs inside the request that paired the turn: it must
   * only take note and return. Returns the function that removes the listener.
   */
  onPaired(listener: (turnId: number) => void): () => void {
    this.pairedListeners.add(listener);
    return () => { this.pairedListeners.delete(listener); };
  }

  /**
   * When each turn got its next state: the start of the session's next main turn (whose request
   * carried it). No column of its own: pairing happens as that request begins.
   */
  pairedAt(turnId: number): number | null {
    const r = this.sql(`SELECT n.created_at AS at FROM turns t JOIN turns n ON n.session_id = t.session_id AND n.turn_type = 'main' AND n.idx = t.idx + 1
      WHERE t.id = ?`).get(turnId) as { at: number } | undefined;
    return r ? Number(r.at) : null;
  }

  /** End every session still open (at shutdown): no turn is left waiting for a next state. */
  endOpenSessions(reason: 'shutdown'): number {
    const open = this.sql('SELECT id FROM sessions WHERE ended_at IS NULL').all() as { id: string }[];
    for (const { id } of open) this.endSession(id, reason);
    return open.length;
  }

  hasSession(sessionId: string): boolean {
    return !!this.sql('SELECT 1 FROM sessions WHERE id = ?').get(sessionId);
  }

  /** End a session; its last main turn, still waiting for a next state, gets none. */
  endSession(sessionId: string, reason: 'done' | 'idle' | 'shutdown'): void {
    this.transaction(() => {
      this.sql('UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL').run(Date.now(), reason, sessionId);
      this.sql(`UPDATE turns SET next_state_status = 'none', next_state_reason = ? WHERE session_id = ? AND next_state_status = 'pending'`)
        .run(`session ended (${reason})`, sessionId);
    });
    this.appendLog(this.conversations, this.logged({ event: 'session_end', sessionId, reason }));
  }

  /** The highest weights version ever recorded (0 when none): a new version must be numbered above it. */
  versionFloor(): number {
    const r = this.sql(`SELECT MAX(v) AS v FROM (SELECT MAX(version) AS v FROM weights_versions
      UNION ALL SELECT MAX(version) FROM training_steps UNION ALL SELECT MAX(policy_version) FROM turns)`).get() as { v: number | null };
    return Number(r.v ?? 0);
  }

  /** Record a weights version before it is served (durable once this returns); a number is never reused. */
  recordVersion(version: number, step: number, source: 'step' | 'resume' | 'rollback' | 'fresh'): void {
    this.sql('INSERT INTO weights_versions (version, step, source, created_at) VALUES (?, ?, ?, ?)').run(version, step, source, Date.now());
  }

  /** Paired main turns that have no judgement yet, or whose deferred judgement is due. */
  turnsToJudge(limit: number, now = Date.now()): TurnRow[] {
    return this.sql(`SELECT t.* FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id
      WHERE t.turn_type = 'main' AND t.status = 'complete' AND t.next_state_status = 'paired'
        AND (j.turn_id IS NULL OR (j.status = 'deferred' AND j.next_attempt_at <= ?))
      ORDER BY t.id LIMIT ?`).all(now, limit) as unknown as TurnRow[];
  }

  saveJudgement(turnId: number, j: { score: number; hint: string | null; votes: unknown[]; backend: string; rule?: string }): void {
    this.transaction(() => {
      const prev = this.sql('SELECT attempts FROM judgements WHERE turn_id = ?').get(turnId) as { attempts: number } | undefined;
      this.sql(`INSERT INTO judgements (turn_id, status, score, hint, votes_json, backend, attempts, next_attempt_at, last_error, updated_at, rule)
        VALUES (?, 'done', ?, ?, ?, ?, ?, NULL, NULL, ?, ?)
        ON CONFLICT(turn_id) DO UPDATE SET status = 'done', score = excluded.score, hint = excluded.hint, votes_json = excluded.votes_json,
          backend = excluded.backend, attempts = excluded.attempts, next_attempt_at = NULL, last_error = NULL, updated_at = excluded.updated_at, rule = excluded.rule`)
        .run(turnId, j.score, this.stored(j.hint), JSON.stringify(this.stored(j.votes)), j.backend, (prev?.attempts ?? 0) + 1, Date.now(), j.rule ?? null);
    });
    this.appendLog(this.judgementsLog, this.logged({ event: 'judgement', turnId, score: j.score, hint: j.hint, backend: j.backend, votes: j.votes, ...(j.rule ? { rule: j.rule } : {}) }));
  }

  /** The judge could not run (outage): keep the turn, try again at `nextAttemptAt`. */
  deferJudgement(turnId: number, backend: string, error: string, nextAttemptAt: number): number {
    return this.transaction(() => {
      const prev = this.sql('SELECT attempts FROM judgements WHERE turn_id = ?').get(turnId) as { attempts: number } | undefined;
      const attempts = (prev?.attempts ?? 0) + 1;
      this.sql(`INSERT INTO judgements (turn_id, status, votes_json, backend, attempts, next_attempt_at, last_error, updated_at)
        VALUES (?, 'deferred', '[]', ?, ?, ?, ?, ?)
        ON CONFLICT(turn_id) DO UPDATE SET status = 'deferred', attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at,
          last_error = excluded.last_error, updated_at = excluded.updated_at`)
        .run(turnId, backend, attempts, nextAttemptAt, this.stored(error), Date.now());
      return attempts;
    });
  }

  judgement(turnId: number): { turn_id: number; status: string; score: number | null; hint: string | null; votes_json: string; backend: string; attempts: number; last_error: string | null } | undefined {
    return this.sql('SELECT * FROM judgements WHERE turn_id = ?').get(turnId) as never;
  }

  sessions(): { id: string; id_source: string; ended_at: number | null; end_reason: string | null }[] {
    return this.db.prepare('SELECT id, id_source, ended_at, end_reason FROM sessions ORDER BY created_at').all() as never;
  }

  turns(sessionId?: string): TurnRow[] {
    return (sessionId
      ? this.db.prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY id').all(sessionId)
      : this.db.prepare('SELECT * FROM turns ORDER BY id').all()) as unknown as TurnRow[];
  }

  turnsBetween(from: number, to: number): TurnRow[] {
    return this.db.prepare('SELECT * FROM turns WHERE created_at >= ? AND created_at < ? ORDER BY id').all(from, to) as unknown as TurnRow[];
  }

  deleteOlderThan(time: number): number {
    return this.transaction(() => {
      const n = Number(this.db.prepare('DELETE FROM turns WHERE created_at < ?').run(time).changes);
      this.db.prepare('DELETE FROM sessions WHERE last_seen_at < ? AND id NOT IN (SELECT session_id FROM turns)').run(time);
      return n;
    });
  }

  close(): void {
    // a turn still in progress now (its end could not be written, e.g. on a full disk) is over
    try { this.db.exec(`UPDATE turns SET status = 'aborted', finish_reason = 'abort' WHERE status = 'in_progress'`); } catch { /* the next start does it */ }
    for (const log of [this.conversations, this.judgementsLog]) try { log.sync(); } catch { /* nothing more to do */ }
    this.db.close();
  }

  /** JSONL appends that failed (a full disk): the database stays the record; the logs are a copy. */
  logFailures = 0;

  /** Append to a JSONL log; a failure is counted and reported (once a minute), never thrown. */
  private appendLog(log: JsonlLog, record: object): void {
    try {
      log.append(record);
    } catch (e) {
      this.logFailures++;
      const now = Date.now();
      if (now - this.lastLogWarning > 60_000) {
        this.lastLogWarning = now;
        process.stderr.write(`openclaw-rl: cannot append to ${log.file}: ${(e as Error).message} (${this.logFailures} record(s) not logged so far; the database has them)\n`);
      }
    }
  }

  private lastLogWarning = 0;
}

/**
 * A turn as a log/export record. Token ids are included only when `ids` (the store, to decode them)
 * is given: they decode to the text, secrets included, so redacted logs and exports leave them out.
 */
export function rowForLog(r: TurnRow, ids: Pick<Store, 'decodeIds'> | null = null): Record<string, unknown> {
  return {
    id: r.id, sessionId: r.session_id, index: r.idx, turnType: r.turn_type, typeSource: r.type_source, status: r.status,
    request: JSON.parse(r.request_json), ...(ids ? { promptIds: ids.decodeIds(r.prompt_ids), responseIds: ids.decodeIds(r.response_ids) } : {}),
    promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens,
    responseLogprobs: JSON.parse(r.response_logprobs), responseText: r.response_text, answer: r.answer_json ? JSON.parse(r.answer_json) : null, finishReason: r.finish_reason,
    policyVersion: r.policy_version, nextState: r.next_state_json ? JSON.parse(r.next_state_json) : null,
    nextStateStatus: r.next_state_status, nextStateReason: r.next_state_reason, createdAt: new Date(r.created_at).toISOString(),
  };
}
