// The HTTP front door: a small router over node:http. Routes: POST /v1/chat/completions, POST /v1/completions,
// GET /v1/models, GET /healthz, GET /readyz, GET /metrics, POST /v1/sessions/{id}/done.
// Bearer-key auth (constant-time) when a key is configured; /healthz and /readyz stay open.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Engine } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import { SessionTracker } from '../conversation/tracker.ts';
import { ApiError, badRequest, ClientGone, storageError } from './errors.ts';
import { Admission } from './admission.ts';
import { PromptTokenizer } from './tokenize-worker.ts';
import { handleChat, type ChatContext } from './chat.ts';
import { handleCompletion } from './completions.ts';
import { corsHeaders, preflightHeaders } from './cors.ts';
import { Metrics } from './metrics.ts';
import { outputFormatOf } from './output.ts';
import type { Dashboard } from '../dashboard/routes.ts';

export interface ServerOptions {
  /** browser origins allowed to call the API (CORS; '*' for any); none by default */
  corsOrigins?: string[];
  engine: Engine;
  store: Store;
  modelId: string;
  host?: string;
  port?: number;
  apiKey?: string;
  /** allow binding a non-loopback address without an API key */
  allowInsecureBind?: boolean;
  maxBodyBytes?: number;
  maxConcurrent?: number;
  /** requests beyond maxConcurrent wait up to this long in a queue of at most 4 × maxConcurrent before a 429 (default 10 s) */
  queueWaitMs?: number;
  defaultMaxTokens?: number;
  sessionIdleMs?: number;
  /** what to do with prompts longer than the model's context (see ChatContext) */
  contextOverflow?: 'error' | 'truncate';
  /** GET /admin/status adds this (the trainer's and judge's state) */
  status?: () => Record<string, unknown>;
  /** extra Prometheus lines for /metrics (training metrics) */
  extraMetrics?: () => string;
  /** GET /readyz is 200 only while this says ready (every configured background loop runs); default: ready */
  ready?: () => { ready: boolean; reason?: string };
  /** the web dashboard (GET / and /admin/dashboard/*, POST /admin/rollback) */
  dashboard?: Dashboard;
  /** bounded off-policyness: main turns wait here while the trainer is too far behind (see ChatContext.pace) */
  pace?: ChatContext['pace'];
  /** the version new requests get (from the trainer): reported at once after a publish */
  publishedVersion?: () => number;
}

export interface RunningServer { url: string; server: Server; metrics: Metrics; tracker: SessionTracker; close(): Promise<void> }

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export function isLoopback(host: string): boolean { return LOOPBACK.test(host); }

function sameKey(a: string, b: string): boolean {
  // hash first so the comparison takes the same time whatever the lengths
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/**
 * Read a request body up to `limit` bytes. Over the limit (declared or, for a chunked body, counted)
 * it rejects with 413 and discards the rest of the upload, so the client reads the 413 instead of a
 * reset connection. A client that disconnects mid-upload rejects with ClientGone (not an error).
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = (what: string) => new ApiError(413, `the request body ${what}; the limit is ${limit} bytes`, { code: 'request_too_large' });
    const declared = Number(req.headers['content-length']);
    if (declared > limit) { reject(tooLarge(`is ${declared} bytes`)); req.resume(); return; }
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return; // discarded
      size += c.length;
      if (size > limit) { over = true; parts.length = 0; reject(tooLarge(`exceeds ${limit} bytes`)); return; }
      parts.push(c);
    });
    req.on('end', () => { if (!over) resolve(Buffer.concat(parts)); });
    req.on('aborted', () => reject(new ClientGone()));
    req.on('error', () => reject(new ClientGone()));
    req.on('close', () => { if (!req.complete) reject(new ClientGone()); });
  });
}

/** The deepest nesting of arrays and objects in `value`, counted without recursion (stops at `limit` + 1). */
export function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    deepest = Math.max(deepest, d);
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
  }
  return deepest;
}

/** Requests nest no deeper than this (tool schemas and template arguments included); deeper is a 400, not a stack overflow. */
export const MAX_JSON_DEPTH = 64;

/** Session ids in URLs: at most this long. */
const MAX_SESSION_ID = 256;

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  if (res.headersSent) { if (!res.writableEnded) res.end(); return; }
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
}

export async function startServer(o: ServerOptions): Promise<RunningServer> {
  const host = o.host ?? '127.0.0.1';
  if (!isLoopback(host) && !o.apiKey && !o.allowInsecureBind) {
    throw new Error(`refusing to serve on ${host} without an API key: set OPENCLAW_RL_API_KEY (or pass --allow-insecure-bind to accept the risk)`);
  }
  const metrics = new Metrics();
  const tracker = new SessionTracker(o.store, { idleMs: o.sessionIdleMs ?? 30 * 60_000 });
  const ctx: ChatContext = {
    engine: o.engine, modelId: o.modelId, store: o.store, tracker, metrics, format: outputFormatOf(o.engine.tokenizer.chatTemplate),
    maxConcurrent: o.maxConcurrent ?? 16, admission: new Admission(o.maxConcurrent ?? 16, { waitMs: o.queueWaitMs }), prompts: new PromptTokenizer(o.engine.tokenizer), defaultMaxTokens: o.defaultMaxTokens ?? 1024, contextOverflow: o.contextOverflow ?? 'error',
    ...(o.pace ? { pace: o.pace } : {}),
  };
  const maxBody = o.maxBodyBytes ?? 8 * 2 ** 20;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    let status = 200;
    try {
      const cors = corsHeaders(o.corsOrigins ?? [], req.headers.origin);
      if (cors) for (const [k, v] of Object.entries(cors)) res.setHeader(k, v);
      // a CORS preflight carries no credentials: answered before the key check
      if (cors && req.method === 'OPTIONS') { res.writeHead(204, preflightHeaders(req.headers['access-control-request-headers'])).end(); return; }
      if (req.method === 'GET' && path === '/healthz') return sendJson(res, 200, { status: 'ok' });
      if (req.method === 'GET' && path === '/readyz') {
        const r = o.ready?.() ?? { ready: true };
        return sendJson(res, r.ready ? 200 : 503, r.ready ? { status: 'ready', model: o.modelId } : { status: 'not_ready', reason: r.reason ?? null, model: o.modelId });
      }
      if (o.dashboard?.servePublic(req, res, path)) return;
      if (o.apiKey) {
        const auth = req.headers.authorization ?? '';
        const m = /^Bearer\s+(.+)$/i.exec(auth);
        if (!m || !sameKey(m[1].trim(), o.apiKey)) throw new ApiError(401, 'missing or wrong API key: send "Authorization: Bearer <key>"', { code: 'invalid_api_key' });
      }
      if (o.publishedVersion) metrics.policyVersion = o.publishedVersion();
      if (o.dashboard && await o.dashboard.handle(req, res, path, url, { policyVersion: metrics.policyVersion, requestsInFlight: metrics.active, openSessions: tracker.openSessions, requests: Object.fromEntries(metrics.requests) })) return;
      if (req.method === 'GET' && path === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(metrics.render({ activeSessions: tracker.openSessions }) + (o.extraMetrics?.() ?? ''));
        return;
      }
      if (req.method === 'GET' && path === '/admin/status') {
        return sendJson(res, 200, { model: o.modelId, policyVersion: metrics.policyVersion, requestsInFlight: metrics.active, openSessions: tracker.openSessions, ...o.status?.() });
      }
      if (req.method === 'GET' && path === '/v1/models') {
        return sendJson(res, 200, { object: 'list', data: [{ id: o.modelId, object: 'model', created: 0, owned_by: 'openclaw-rl', max_model_len: o.engine.info.contextLength }] });
      }
      const doneMatch = /^\/v1\/sessions\/([^/]+)\/done$/.exec(path);
      if (req.method === 'POST' && doneMatch) {
        let id: string;
        try { id = decodeURIComponent(doneMatch[1]); } catch { throw badRequest('the session id in the path is not valid percent-encoding', 'session_id'); }
        if (id.length > MAX_SESSION_ID) throw badRequest(`the session id is longer than ${MAX_SESSION_ID} characters`, 'session_id');
        // only sessions this server has seen: arbitrary ids are neither recorded nor logged
        if (!o.store.hasSession(id)) throw new ApiError(404, 'no such session', { param: 'session_id', code: 'session_not_found' });
        tracker.end(id, 'done');
        return sendJson(res, 200, { session: id, ended: true });
      }
      if (path === '/v1/chat/completions' || path === '/v1/completions') {
        if (req.method !== 'POST') throw new ApiError(405, `${req.method} is not allowed on ${path}; use POST`);
        const raw = await readBody(req, maxBody);
        let body: unknown;
        try { body = JSON.parse(raw.toString('utf8')); } catch (e) { throw badRequest(`the request body is not valid JSON: ${(e as Error).message}`); }
        if (nestingDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw badRequest(`the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`, null, 'nesting_too_deep');
        await (path === '/v1/completions' ? handleCompletion : handleChat)(ctx, req, res, body);
        return;
      }
      throw new ApiError(404, `no route for ${req.method} ${path}`);
    } catch (e) {
      if (e instanceof ClientGone) { status = 499; if (!res.headersSent) res.destroy(); return; } // nobody to answer
      const err = e instanceof ApiError ? e : storageError(e) ?? new ApiError(500, `internal error: ${(e as Error).message}`);
      status = err.status;
      if (err.status === 507) process.stderr.write(`openclaw-rl: ${err.message}\n`);
      else if (err.status >= 500) process.stderr.write(`openclaw-rl: ${(e as Error).stack ?? e}\n`);
      sendJson(res, err.status, err.toJSON());
    } finally {
      if (path === '/v1/chat/completions' || path === '/v1/completions') metrics.countRequest(status === 499 ? 499 : res.statusCode || status);
    }
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(o.port ?? 30000, host, () => resolve()); });
  const addr = server.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${shownHost}:${addr.port}`, server, metrics, tracker,
    close: async () => {
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeIdleConnections(); setTimeout(() => server.closeAllConnections(), 5000).unref(); });
      tracker.shutdown();
      await ctx.prompts.close();
    },
  };
}
