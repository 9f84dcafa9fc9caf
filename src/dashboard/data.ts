// What the dashboard (and `openclaw-rl turns`) shows, read from the store: the overview, turns joined
// with their judgement and training sample, sessions, and weights versions. Every text leaves through
// the store's redaction (redactSecrets on each string of the view), so a secret the store keeps out of
// its logs never reaches a page or a terminal either.
import type { DatabaseSync } from 'node:sqlite';
import { redactSecrets } from '../store/redact.ts';
import { contentText, type WireMessage } from '../conversation/messages.ts';

/** A store, or a read-only connection to one (the CLI reads a running server's data folder). */
export interface StoreReader { db: DatabaseSync }

export interface TurnFilter {
  session?: string;
  /** the judge's majority score */
  reward?: -1 | 0 | 1;
  /** created at or after / before (ms since the epoch) */
  from?: number;
  to?: number;
  /** only turns with an id below this (paging, newest first) */
  before?: number;
  limit?: number;
  turnType?: 'main' | 'side';
}

/** Per-token advantages of a sample over its unmasked tokens. */
export interface AdvantageSummary { tokens: number; masked: number; mean: number | null; min: number | null; max: number | null }
export interface VoteView { kind: string; score: number | null; hint: string | null; text: string; error: string | null; dropped: string | null }
export interface TurnView {
  id: number; sessionId: string; index: number; turnType: string; typeSource: string; status: string; createdAt: string;
  /** the weights version the answer was sampled with */
  sampledVersion: number;
  prompt: string; answer: string; finishReason: string; promptTokens: number; completionTokens: number;
  nextState: { status: string; role: string | null; text: string | null; reason: string | null };
  judgement: { status: string; score: number | null; hint: string | null; votes: VoteView[]; backend: string; attempts: number; lastError: string | null; rule: string | null } | null;
  sample: {
    kind: string; status: string; reason: string | null; reward: number | null;
    advantage: AdvantageSummary;
    behaviourVersion: number; trainedByStep: number | null; trainedIntoVersion: number | null;
  } | null;
}

/** Every string in a value through the store's redaction (each string as written, not its JSON escape). */
export function redacted<T>(value: T): T {
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (Array.isArray(value)) return value.map(redacted) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redacted(v)])) as T;
  return value;
}

function lastUserText(requestJson: string): string {
  try {
    const { messages } = JSON.parse(requestJson) as { messages: WireMessage[] };
    const users = messages.filter((m) => m.role === 'user');
    return contentText(users[users.length - 1]?.content ?? '');
  } catch { return ''; }
}

function answerText(answerJson: string | null, fallback: string): string {
  if (!answerJson) return fallback;
  const a = JSON.parse(answerJson) as { content: string; toolCalls?: { name: string; arguments: string }[] };
  return [a.content, ...(a.toolCalls ?? []).map((c) => `[tool call] ${c.name}(${c.arguments})`)].filter(Boolean).join('\n');
}

function advantageSummary(advantagesJson: string, maskJson: string): AdvantageSummary {
  const adv = JSON.parse(advantagesJson) as number[];
  const mask = JSON.parse(maskJson) as number[];
  const used = adv.filter((_, i) => (mask[i] ?? 1) > 0);
  if (!used.length) return { tokens: adv.length, masked: adv.length, mean: null, min: null, max: null };
  return { tokens: adv.length, masked: adv.length - used.length, mean: used.reduce((a, b) => a + b, 0) / used.length, min: Math.min(...used), max: Math.max(...used) };
}

type JoinedRow = {
  id: number; session_id: string; idx: number; turn_type: string; type_source: string; status: string; created_at: number; policy_version: number;
  request_json: string; response_text: string; answer_json: string | null; finish_reason: string; prompt_tokens: number; completion_tokens: number;
  next_state_json: string | null; next_state_status: string; next_state_reason: string | null;
  j_status: string | null; j_score: number | null; j_hint: string | null; j_votes: string | null; j_backend: string | null; j_attempts: number | null; j_error: string | null; j_rule: string | null;
  s_kind: string | null; s_status: string | null; s_reason: string | null; s_reward: number | null; s_adv: string | null; s_mask: string | null; s_version: number | null; s_step: number | null; s_trained_version: number | null;
};

/** Whether the store's judgements have the rule column (schema 5; `turns` reads older stores read-only, unmigrated). */
const hasRule = (store: StoreReader) => (store.db.prepare('PRAGMA table_info(judgements)').all() as { name: string }[]).some((c) => c.name === 'rule');

/** Turns (newest first) joined with judgement and sample, redacted. */
export function listTurns(store: StoreReader, f: TurnFilter = {}): TurnView[] {
  const where: string[] = [];
  const args: (string | number)[] = [];
  if (f.session !== undefined) { where.push('t.session_id = ?'); args.push(f.session); }
  if (f.reward !== undefined) { where.push(`j.status = 'done' AND j.score = ?`); args.push(f.reward); }
  if (f.from !== undefined) { where.push('t.created_at >= ?'); args.push(f.from); }
  if (f.to !== undefined) { where.push('t.created_at < ?'); args.push(f.to); }
  if (f.before !== undefined) { where.push('t.id < ?'); args.push(f.before); }
  if (f.turnType !== undefined) { where.push('t.turn_type = ?'); args.push(f.turnType); }
  const limit = Math.max(1, Math.min(500, f.limit ?? 50));
  const rows = store.db.prepare(`SELECT t.id, t.session_id, t.idx, t.turn_type, t.type_source, t.status, t.created_at, t.policy_version, t.request_json,
      t.response_text, t.answer_json, t.finish_reason, t.prompt_tokens, t.completion_tokens, t.next_state_json, t.next_state_status, t.next_state_reason,
      j.status AS j_status, j.score AS j_score, j.hint AS j_hint, j.votes_json AS j_votes, j.backend AS j_backend, j.attempts AS j_attempts, j.last_error AS j_error, ${hasRule(store) ? 'j.rule' : 'NULL'} AS j_rule,
      s.kind AS s_kind, s.status AS s_status, s.reason AS s_reason, s.reward AS s_reward, s.advantages AS s_adv, s.loss_mask AS s_mask, s.behaviour_version AS s_version, s.step AS s_step,
      (SELECT ts.version FROM training_steps ts WHERE s.step IS NOT NULL AND ts.step = s.step
         AND ts.status = CASE s.status WHEN 'trained' THEN 'published' ELSE 'rolled_back' END ORDER BY ts.id DESC LIMIT 1) AS s_trained_version
    FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id LEFT JOIN samples s ON s.turn_id = t.id
    ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY t.id DESC LIMIT ?`).all(...args, limit) as unknown as JoinedRow[];
  return rows.map((r) => redacted(turnView(r)));
}

function turnView(r: JoinedRow): TurnView {
  const next = r.next_state_json ? JSON.parse(r.next_state_json) as { role: string; messages: WireMessage[] } : null;
  const votes = r.j_votes ? (JSON.parse(r.j_votes) as { kind: string; score: number | null; hint: string | null; text: string; error?: string; dropped?: string }[]) : [];
  const trained = r.s_status === 'trained' || r.s_status === 'rolled_back';
  return {
    id: r.id, sessionId: r.session_id, index: r.idx, turnType: r.turn_type, typeSource: r.type_source, status: r.status, createdAt: new Date(r.created_at).toISOString(),
    sampledVersion: r.policy_version, prompt: lastUserText(r.request_json), answer: answerText(r.answer_json, r.response_text), finishReason: r.finish_reason,
    promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens,
    nextState: { status: r.next_state_status, role: next?.role ?? null, text: next ? next.messages.map((m) => contentText(m.content)).join('\n\n') : null, reason: r.next_state_reason },
    judgement: r.j_status === null ? null : {
      status: r.j_status, score: r.j_score, hint: r.j_hint, backend: r.j_backend ?? '', attempts: r.j_attempts ?? 0, lastError: r.j_error, rule: r.j_rule ?? null,
      votes: votes.map((v) => ({ kind: v.kind, score: v.score, hint: v.hint, text: v.text.length > 600 ? `${v.text.slice(0, 600)}…` : v.text, error: v.error ?? null, dropped: v.dropped ?? null })),
    },
    sample: r.s_kind === null ? null : {
      kind: r.s_kind, status: r.s_status!, reason: r.s_reason, reward: r.s_reward, advantage: advantageSummary(r.s_adv!, r.s_mask!),
      behaviourVersion: r.s_version!, trainedByStep: trained ? r.s_step : null, trainedIntoVersion: trained ? r.s_trained_version : null,
    },
  };
}

export interface SessionView { id: string; idSource: string; createdAt: string; lastSeenAt: string; endedAt: string | null; endReason: string | null; mainTurns: number; sideTurns: number; rewardMean: number | null }

export function listSessions(store: StoreReader, limit = 100): SessionView[] {
  const rows = store.db.prepare(`SELECT s.id, s.id_source, s.created_at, s.last_seen_at, s.ended_at, s.end_reason,
      SUM(t.turn_type = 'main') AS main, SUM(t.turn_type = 'side') AS side, AVG(j.score) AS reward
    FROM sessions s LEFT JOIN turns t ON t.session_id = s.id LEFT JOIN judgements j ON j.turn_id = t.id AND j.status = 'done'
    GROUP BY s.id ORDER BY s.last_seen_at DESC LIMIT ?`).all(Math.max(1, Math.min(1000, limit))) as { id: string; id_source: string; created_at: number; last_seen_at: number; ended_at: number | null; end_reason: string | null; main: number | null; side: number | null; reward: number | null }[];
  return redacted(rows.map((r) => ({
    id: r.id, idSource: r.id_source, createdAt: new Date(r.created_at).toISOString(), lastSeenAt: new Date(r.last_seen_at).toISOString(),
    endedAt: r.ended_at ? new Date(r.ended_at).toISOString() : null, endReason: r.end_reason, mainTurns: Number(r.main ?? 0), sideTurns: Number(r.side ?? 0), rewardMean: r.reward,
  })));
}

export interface VersionView { version: number; step: number | null; status: string; publishedAt: string | null; samples: number; rewardMean: number | null; reason: string | null; kept: boolean }

/** Weights versions, newest first: each published (or rolled back to) by a step, with the samples it trained on. */
export function listVersions(store: StoreReader, kept: (v: number) => boolean): VersionView[] {
  const rows = store.db.prepare(`SELECT step, status, version, samples, reward_mean, reason, created_at FROM training_steps WHERE version IS NOT NULL ORDER BY id DESC`)
    .all() as { step: number | null; status: string; version: number; samples: number; reward_mean: number | null; reason: string | null; created_at: number }[];
  const out: VersionView[] = rows.map((r) => ({ version: r.version, step: r.step, status: r.status, publishedAt: new Date(r.created_at).toISOString(), samples: r.samples, rewardMean: r.reward_mean, reason: r.reason, kept: kept(r.version) }));
  out.push({ version: 0, step: 0, status: 'base', publishedAt: null, samples: 0, rewardMean: null, reason: 'the base model (no adapter)', kept: kept(0) });
  return out;
}

/** The turns a version was trained on (the samples of the step that published it). */
export function versionSamples(store: StoreReader, version: number): { turnId: number; sessionId: string; kind: string; reward: number | null; status: string }[] {
  const step = store.db.prepare(`SELECT step, status FROM training_steps WHERE version = ? AND status IN ('published', 'rolled_back') ORDER BY id DESC LIMIT 1`).get(version) as { step: number; status: string } | undefined;
  if (!step) return [];
  return store.db.prepare(`SELECT s.turn_id AS turnId, t.session_id AS sessionId, s.kind, s.reward, s.status FROM samples s JOIN turns t ON t.id = s.turn_id
    WHERE s.step = ? AND s.status = ? ORDER BY s.turn_id`).all(step.step, step.status === 'published' ? 'trained' : 'rolled_back') as never;
}

export interface JudgeHealth { judged: number; deferred: number; retries: number; voteErrors: number; lastError: string | null }

/**
 * The judge's health from the store: judged turns, turns waiting for a retry, retries so far, failed votes, the
 * last error. Polled every 2 s: only rows whose votes mention an error are parsed.
 */
export function judgeHealth(store: StoreReader): JudgeHealth {
  const row = store.db.prepare(`SELECT SUM(status = 'done') AS judged, SUM(status = 'deferred') AS deferred, SUM(MAX(attempts - 1, 0)) AS retries,
      SUM(CASE WHEN votes_json LIKE '%"error":%' THEN (SELECT COUNT(*) FROM json_each(votes_json) WHERE json_extract(value, '$.error') IS NOT NULL) ELSE 0 END) AS vote_errors
    FROM judgements`).get() as Record<string, number | null>;
  const last = store.db.prepare(`SELECT last_error FROM judgements WHERE last_error IS NOT NULL ORDER BY updated_at DESC LIMIT 1`).get() as { last_error: string } | undefined;
  return redacted({ judged: Number(row.judged ?? 0), deferred: Number(row.deferred ?? 0), retries: Number(row.retries ?? 0), voteErrors: Number(row.vote_errors ?? 0), lastError: last?.last_error ?? null });
}

export function sampleCounts(store: StoreReader): Record<string, number> {
  return Object.fromEntries((store.db.prepare(`SELECT status, COUNT(*) AS n FROM samples GROUP BY status`).all() as { status: string; n: number }[]).map((r) => [r.status, Number(r.n)]));
}

export function turnCounts(store: StoreReader): { sessions: number; turns: number; main: number; side: number } {
  const t = store.db.prepare(`SELECT COUNT(*) AS turns, SUM(turn_type = 'main') AS main, SUM(turn_type = 'side') AS side FROM turns`).get() as Record<string, number | null>;
  const s = store.db.prepare(`SELECT COUNT(*) AS n FROM sessions`).get() as { n: number };
  return { sessions: Number(s.n), turns: Number(t.turns ?? 0), main: Number(t.main ?? 0), side: Number(t.side ?? 0) };
}
