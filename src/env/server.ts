// The environment pool over HTTP (`openclaw-rl env-server`), so environments can run on other
// machines. The verbs and shapes follow upstream's pool server: every reply is JSON with
// `ok: true` on success; a full pool answers 429, a lost lease 410, a bad request 400, an unknown
// route 404 — each with `{ok: false, error: {message, type}}`.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PoolFullError, LeaseLostError, EnvRequestError, type EnvPool } from './types.ts';

export interface EnvServerOptions { host: string; port: number; maxBodyBytes: number }

export interface RunningEnvServer { url: string; server: Server; close(): Promise<void> }

class HttpError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(status: number, type: string, message: string) { super(message); this.status = status; this.type = type; }
}

async function readJson(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > limit) throw new HttpError(413, 'invalid_request_error', `request body over ${limit} bytes`);
    chunks.push(c as Buffer);
  }
  if (size === 0) return {};
  let v: unknown;
  try { v = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch (e) { throw new HttpError(400, 'invalid_request_error', `body is not valid JSON: ${(e as Error).message}`); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError(400, 'invalid_request_error', 'body must be a JSON object');
  return v as Record<string, unknown>;
}

function str(body: Record<string, unknown>, key: string): string {
  const v = body[key];
  if (typeof v !== 'string' || v === '') throw new HttpError(400, 'invalid_request_error', `'${key}' must be a non-empty string`);
  return v;
}

type Handler = (body: Record<string, unknown>) => Promise<Record<string, unknown>>;

export function routes(pool: EnvPool): Record<string, Handler> {
  return {
    'POST /allocate': async (b) => ({ lease_id: await pool.allocate(str(b, 'task_key'), typeof b.request_id === 'string' ? b.request_id : undefined), heartbeat_ms: pool.heartbeatMs }),
    'POST /heartbeat': async (b) => { await pool.heartbeat(str(b, 'lease_id')); return {}; },
    'POST /reset': async (b) => {
      const r = await pool.reset(str(b, 'lease_id'), b.task_meta as never);
      return { user_msg: r.user, system_msg: r.system, tool_schemas: r.tools, max_tool_calls: r.maxToolCalls };
    },
    'POST /exec_tool': async (b) => {
      const tc = b.tool_call as { name?: unknown; arguments?: unknown } | undefined;
      if (!tc || typeof tc.name !== 'string') throw new HttpError(400, 'invalid_request_error', `'tool_call' must be {name, arguments}`);
      let args = tc.arguments;
      if (typeof args === 'string') { try { args = JSON.parse(args); } catch { throw new HttpError(400, 'invalid_request_error', 'tool_call.arguments is a string that is not JSON'); } }
      const o = await pool.execTool(str(b, 'lease_id'), { name: tc.name, arguments: (args && typeof args === 'object' ? args : {}) as Record<string, unknown> });
      return { observation: o.content, error: o.error, done: o.done };
    },
    'POST /evaluate': async (b) => {
      const e = await pool.evaluate(str(b, 'lease_id'), { finalMessage: typeof b.final_message === 'string' ? b.final_message : '', toolCalls: Number(b.tool_calls ?? 0) });
      return { score: e.score, success: e.success, passed: e.passed ?? null, total: e.total ?? null, detail: e.detail ?? null };
    },
    'POST /close': async (b) => { await pool.close(str(b, 'lease_id')); return {}; },
    'GET /stats': async () => ({ stats: await pool.stats() }),
    'GET /healthz': async () => ({}),
  };
}

export async function startEnvServer(pool: EnvPool, o: Partial<EnvServerOptions> = {}): Promise<RunningEnvServer> {
  const opts: EnvServerOptions = { host: '127.0.0.1', port: 18081, maxBodyBytes: 4 * 2 ** 20, ...o };
  const table = routes(pool);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, body: object) => { if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)); };
    const path = (req.url ?? '/').split('?')[0];
    const handler = table[`${req.method} ${path}`];
    void (async () => {
      try {
        if (!handler) throw new HttpError(404, 'not_found_error', `no route ${req.method} ${path}`);
        const body = req.method === 'POST' ? await readJson(req, opts.maxBodyBytes) : {};
        send(200, { ok: true, ...(await handler(body)) });
      } catch (e) {
        const err = e instanceof HttpError ? e
          : e instanceof PoolFullError ? new HttpError(429, 'rate_limit_error', e.message)
          : e instanceof LeaseLostError ? new HttpError(410, 'lease_lost', e.message)
          : e instanceof EnvRequestError ? new HttpError(400, 'invalid_request_error', e.message)
          : new HttpError(500, 'internal_error', (e as Error).message);
        send(err.status, { ok: false, error: { message: err.message, type: err.type } });
      }
    })();
  });
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(opts.port, opts.host, () => resolve()); });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${addr.port}`, server,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
