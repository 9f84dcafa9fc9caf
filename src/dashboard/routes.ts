// The dashboard's HTTP routes, mounted by the server. The page itself (GET /, its script and style)
// holds no data and is served without the key, so a browser can show a login prompt; every data
// route sits behind the server's bearer-key check:
//   GET  /admin/dashboard/live?after=N   overview + metrics lines from index N (the page polls this)
//   GET  /admin/dashboard/turns?session=&reward=&from=&to=&before=&limit=&type=
//   GET  /admin/dashboard/sessions
//   GET  /admin/dashboard/versions       and /admin/dashboard/versions/{v} (the samples it trained on)
//   POST /admin/rollback {"version": N}
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Store } from '../store/store.ts';
import type { EngineInfo } from '../engine/types.ts';
import type { TrainerLoop } from '../trainer/loop.ts';
import type { RollbackResult } from '../trainer/versions.ts';
import { RollbackError } from '../trainer/versions.ts';
import { ApiError, badRequest } from '../api/errors.ts';
import type { MetricsLog } from './metrics-log.ts';
import { listTurns, listSessions, listVersions, versionSamples, judgeHealth, sampleCounts, turnCounts, type TurnFilter } from './data.ts';

export interface DashboardContext {
  store: Store;
  modelId: string;
  engine: EngineInfo & { name?: string };
  startedAt: number;
  metricsLog: MetricsLog | null;
  /** the trainer, once created (null when learning is off) */
  trainer: () => TrainerLoop | null;
  judgeKind: string;
  /** versions that can be rolled back to */
  keptVersions: () => number[];
  rollback: ((version: number) => Promise<RollbackResult>) | null;
  /** what `--eval-file` evaluation is configured to do, if anything */
  evaluation?: () => Record<string, unknown> | null;
}

/** What the server knows and the store does not: requests served and in flight, open sessions, the published version. */
export interface ServingState { policyVersion: number; requestsInFlight: number; openSessions: number; requests: Record<string, number> }

const STATIC: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(payload));
}

function intParam(url: URL, name: string, check: (n: number) => boolean = () => true): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || !check(n)) throw badRequest(`query parameter '${name}' must be an integer${raw ? ` (got '${raw}')` : ''}`, name);
  return n;
}

function timeParam(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return undefined;
  const t = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(t)) throw badRequest(`query parameter '${name}' must be an ISO time or milliseconds since 1970 (got '${raw}')`, name);
  return t;
}

/** Turn filters from a query string, validated (400 on nonsense). */
export function turnFilterOf(url: URL): TurnFilter {
  const reward = intParam(url, 'reward', (n) => n >= -1 && n <= 1) as TurnFilter['reward'];
  const type = url.searchParams.get('type') || undefined;
  if (type !== undefined && type !== 'main' && type !== 'side') throw badRequest(`query parameter 'type' must be main or side`, 'type');
  return {
    session: url.searchParams.get('session') || undefined, reward, from: timeParam(url, 'from'), to: timeParam(url, 'to'),
    before: intParam(url, 'before', (n) => n > 0), limit: intParam(url, 'limit', (n) => n >= 1 && n <= 500), turnType: type,
  };
}

function readSmallBody(req: IncomingMessage, limit = 4096): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) { reject(new ApiError(413, `the request body exceeds ${limit} bytes`, { code: 'request_too_large' })); req.destroy(); return; }
      parts.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

export class Dashboard {
  private readonly ctx: DashboardContext;
  private readonly pages = new Map<string, Buffer>();

  constructor(ctx: DashboardContext) {
    this.ctx = ctx;
    for (const [path, { file }] of Object.entries(STATIC)) this.pages.set(path, readFileSync(new URL(`./static/${file}`, import.meta.url)));
  }

  /** The page and its assets (no data, no key needed). Returns whether it answered. */
  servePublic(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    const page = req.method === 'GET' || req.method === 'HEAD' ? STATIC[path] : undefined;
    if (!page) return false;
    res.writeHead(200, {
      'content-type': page.type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    }).end(req.method === 'HEAD' ? undefined : this.pages.get(path));
    return true;
  }

  /** The data routes (after the key check). Returns whether it answered. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string, url: URL, serving: ServingState): Promise<boolean> {
    if (path === '/admin/rollback') {
      if (req.method !== 'POST') throw new ApiError(405, `${req.method} is not allowed on ${path}; use POST`);
      let body: { version?: unknown };
      try { body = JSON.parse(await readSmallBody(req)); } catch (e) { throw e instanceof ApiError ? e : badRequest('the request body must be JSON like {"version": 3}'); }
      const version = body?.version;
      if (typeof version !== 'number' || !Number.isInteger(version) || version < 0) throw badRequest('"version" must be a non-negative integer', 'version');
      if (!this.ctx.rollback) throw new ApiError(409, 'learning is off (serve --no-train): there are no trained versions to roll back to', { code: 'learning_off' });
      try {
        const r = await this.ctx.rollback(version);
        this.ctx.metricsLog?.rollback({ target: r.target, version: r.version, step: r.step, fromVersion: r.from.version, fromStep: r.from.step, samplesSetAside: r.samplesSetAside });
        sendJson(res, 200, r);
      } catch (e) {
        if (e instanceof RollbackError) throw new ApiError(404, e.message, { param: 'version', code: 'version_not_kept' });
        throw e;
      }
      return true;
    }
    if (!path.startsWith('/admin/dashboard/')) return false;
    if (req.method !== 'GET') throw new ApiError(405, `${req.method} is not allowed on ${path}; use GET`);
    const what = path.slice('/admin/dashboard/'.length);
    const store = this.ctx.store;
    if (what === 'live') {
      const after = intParam(url, 'after', (n) => n >= 0) ?? 0;
      sendJson(res, 200, { overview: this.overview(serving), metrics: this.ctx.metricsLog?.since(after) ?? { lines: [], next: 0 } });
    } else if (what === 'turns') {
      sendJson(res, 200, { turns: listTurns(store, turnFilterOf(url)) });
    } else if (what === 'sessions') {
      sendJson(res, 200, { sessions: listSessions(store, intParam(url, 'limit', (n) => n >= 1) ?? 100) });
    } else if (what === 'versions') {
      const kept = new Set(this.ctx.keptVersions());
      sendJson(res, 200, { published: serving.policyVersion, versions: listVersions(store, (v) => kept.has(v)) });
    } else if (/^versions\/\d+$/.test(what)) {
      const v = Number(what.slice('versions/'.length));
      sendJson(res, 200, { version: v, samples: versionSamples(store, v) });
    } else {
      throw new ApiError(404, `no route for ${req.method} ${path}`);
    }
    return true;
  }

  overview(serving: ServingState): Record<string, unknown> {
    const store = this.ctx.store;
    const trainer = this.ctx.trainer();
    const samples = sampleCounts(store);
    const e = this.ctx.engine;
    return {
      model: this.ctx.modelId,
      engine: { name: e.name ?? 'embedded', modelType: e.modelType, kernel: e.kernel, threads: e.threads, contextLength: e.contextLength },
      method: trainer?.o.method ?? null, learning: trainer !== null,
      policyVersion: serving.policyVersion, step: trainer?.step ?? 0,
      samples: { pending: samples.pending ?? 0, trained: samples.trained ?? 0, byStatus: samples },
      lastStep: trainer?.lastStep ?? null,
      judge: { kind: this.ctx.judgeKind, ...judgeHealth(store) },
      ...turnCounts(store),
      requestsInFlight: serving.requestsInFlight, openSessions: serving.openSessions,
      requests: serving.requests, uptimeSeconds: Math.round((Date.now() - this.ctx.startedAt) / 1000),
      evaluation: this.ctx.evaluation?.() ?? null, rollbackTo: this.ctx.keptVersions(),
    };
  }
}
