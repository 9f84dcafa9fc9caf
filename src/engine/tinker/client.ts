// The Tinker HTTP client: transport (X-API-Key, timeouts, retries with backoff on 408/409/429/5xx
// and connection errors, one X-Idempotency-Key per logical request reused across its retries),
// the future poller (long-poll retrieve_future: try_again / 408 / 5xx poll again, 429 backs off,
// failures raise), and the session (handshake, create_session, heartbeat every 10 s, counters for
// model and sampler sequence ids). Works against Tinker cloud, SkyRL's server and serve-tinker.
import { randomUUID } from 'node:crypto';
import { SDK_VERSION, type UntypedFuture } from './wire.ts';
import { decodeForwardBackwardOutput, decodeSampleResponse } from './proto.ts';

export interface TinkerClientOptions {
  baseUrl: string;
  /** sent as X-API-Key (never logged) */
  apiKey?: string;
  /** retries of one request before it fails (default 10, as the SDK's transport) */
  maxRetries?: number;
  /** first backoff in ms (doubles per retry, capped at maxBackoffMs; default 500 / 10 000) */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** per-request timeout for ordinary calls (default 60 s) and for one long poll (default 45 s) */
  timeoutMs?: number;
  pollTimeoutMs?: number;
  heartbeatMs?: number;
  /** 'proto' sends forward_backward as protobuf and asks for protobuf results; 'json' never does */
  wire?: 'proto' | 'json';
  log?: (line: string) => void;
  fetch?: typeof fetch;
}

/** An HTTP answer that is not a success. */
export class TinkerHttpError extends Error {
  override name = 'TinkerHttpError';
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string, what: string) {
    super(`${what}: HTTP ${status}${body ? `: ${body.slice(0, 500)}` : ''}`);
    this.status = status; this.body = body;
  }
}

/** A compute request the server reports as failed (retrieve_future answered {error, category}). */
export class TinkerRequestFailed extends Error {
  override name = 'TinkerRequestFailed';
  readonly category: string;
  constructor(message: string, category: string) { super(message); this.category = category; }
}

const RETRYABLE = (s: number) => s === 408 || s === 409 || s === 429 || s >= 500;
const PROTO = 'application/x-protobuf';

export type ResultKind = 'sample' | 'forward_backward' | 'other';

export class TinkerHttp {
  readonly o: Required<Omit<TinkerClientOptions, 'apiKey' | 'log' | 'fetch'>> & TinkerClientOptions;
  private readonly fetchFn: typeof fetch;
  /** requests sent, retries included (for benchmarks and tests) */
  requests = 0;

  constructor(o: TinkerClientOptions) {
    this.o = {
      maxRetries: 10, backoffMs: 500, maxBackoffMs: 10_000, timeoutMs: 60_000, pollTimeoutMs: 45_000, heartbeatMs: 10_000, wire: 'proto',
      ...o, baseUrl: o.baseUrl.replace(/\/+$/, ''),
    };
    this.fetchFn = o.fetch ?? fetch;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.o.apiKey ? { 'x-api-key': this.o.apiKey } : {}), ...extra };
  }

  private backoff(attempt: number, res?: Response): number {
    const ms = Number(res?.headers.get('retry-after-ms'));
    if (ms > 0 && ms <= 60_000) return ms;
    const s = Number(res?.headers.get('retry-after'));
    if (s > 0 && s <= 60) return s * 1000;
    const base = Math.min(this.o.backoffMs * 2 ** attempt, this.o.maxBackoffMs);
    return base * (1 - Math.random() * 0.25);
  }

  /**
   * One call with retries. Every attempt of a POST carries the same X-Idempotency-Key, so a server
   * that saw an earlier attempt can answer it instead of running the request twice.
   */
  async call(method: 'GET' | 'POST', path: string, body?: unknown, o: { proto?: Uint8Array; signal?: AbortSignal } = {}): Promise<unknown> {
    const idempotencyKey = `openclaw-rl-retry-${randomUUID()}`;
    let lastError: Error | null = null;
    for (let attempt = 0; attempt <= this.o.maxRetries; attempt++) {
      o.signal?.throwIfAborted();
      let res: Response | undefined;
      try {
        this.requests++;
        res = await this.fetchFn(`${this.o.baseUrl}${path}`, {
          method,
          headers: this.headers({
            ...(method === 'POST' ? { 'x-idempotency-key': idempotencyKey, 'content-type': o.proto ? PROTO : 'application/json' } : {}),
            ...(attempt > 0 ? { 'x-stainless-retry-count': String(attempt) } : {}),
          }),
          body: method === 'POST' ? (o.proto ?? JSON.stringify(body ?? {})) : undefined,
          signal: o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(this.o.timeoutMs)]) : AbortSignal.timeout(this.o.timeoutMs),
        });
      } catch (e) {
        if (o.signal?.aborted) throw e;
        lastError = new Error(`${method} ${path}: ${(e as Error).message}`);
        await sleep(this.backoff(attempt), o.signal);
        continue;
      }
      const text = await res.text();
      if (res.ok) return text ? JSON.parse(text) : {};
      const shouldRetry = res.headers.get('x-should-retry');
      const retry = shouldRetry === 'true' || (shouldRetry !== 'false' && RETRYABLE(res.status));
      lastError = new TinkerHttpError(res.status, text, `${method} ${path}`);
      if (!retry) throw lastError;
      await sleep(this.backoff(attempt, res), o.signal);
    }
    throw lastError!;
  }

  /**
   * Long-poll a future until it resolves. try_again, 408 and 5xx poll again at once; 429 and
   * connection errors back off (≤ 30 s); a bare 400 is retried 3 times (SkyRL reports failures so);
   * {error, category} raises TinkerRequestFailed.
   */
  async retrieve(requestId: string, kind: ResultKind, signal?: AbortSignal): Promise<unknown> {
    let backoffs = 0, throttles = 0, badRequests = 0, iteration = 0;
    const acceptProto = this.o.wire === 'proto' && kind !== 'other';
    for (;;) {
      signal?.throwIfAborted();
      let res: Response;
      try {
        this.requests++;
        res = await this.fetchFn(`${this.o.baseUrl}/api/v1/retrieve_future`, {
          method: 'POST',
          headers: this.headers({
            'content-type': 'application/json', 'x-tinker-request-iteration': String(iteration++),
            accept: acceptProto ? `${PROTO}, application/json` : 'application/json',
          }),
          body: JSON.stringify({ request_id: requestId, allow_metadata_only: false }),
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.o.pollTimeoutMs)]) : AbortSignal.timeout(this.o.pollTimeoutMs),
        });
      } catch (e) {
        if (signal?.aborted) throw e;
        await sleep(Math.min(this.o.backoffMs * 2 ** backoffs++, 30_000), signal);
        continue;
      }
      backoffs = 0;
      if (res.status === 408 || res.status >= 500) { await res.arrayBuffer(); continue; }
      if (res.status === 429) { await res.arrayBuffer(); await sleep(Math.min(this.o.backoffMs * 2 ** throttles++, 30_000), signal); continue; }
      if (res.status === 400) {
        const text = await res.text();
        if (++badRequests <= 3) continue;
        throw new TinkerRequestFailed(`request ${requestId} failed: ${text}`, 'user');
      }
      if (!res.ok) throw new TinkerHttpError(res.status, await res.text(), `retrieve_future ${requestId}`);
      if ((res.headers.get('content-type') ?? '').includes(PROTO)) {
        const bytes = new Uint8Array(await res.arrayBuffer());
        return kind === 'sample' ? decodeSampleResponse(bytes) : decodeForwardBackwardOutput(bytes);
      }
      const v = JSON.parse(await res.text()) as Record<string, unknown>;
      if (v.type === 'try_again') continue;
      if (typeof v.error === 'string') throw new TinkerRequestFailed(v.error, String(v.category ?? 'unknown'));
      if (v.status === 'complete_metadata') continue; // we always ask for the full payload
      return v;
    }
  }

  /**
   * The signed download URL of a checkpoint's archive (`checkpointId` like `sampler_weights/final`):
   * the server answers 302 with it in Location; 503 means "being prepared, retry" (as do 408/429/5xx).
   */
  async archiveUrl(runId: string, checkpointId: string, signal?: AbortSignal): Promise<{ url: string; expires: string | null }> {
    const path = `/api/v1/training_runs/${encodeURIComponent(runId)}/checkpoints/${checkpointId.split('/').map(encodeURIComponent).join('/')}/archive`;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      let res: Response;
      try {
        this.requests++;
        res = await this.fetchFn(`${this.o.baseUrl}${path}`, {
          headers: this.headers(), redirect: 'manual',
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.o.timeoutMs)]) : AbortSignal.timeout(this.o.timeoutMs),
        });
      } catch (e) {
        if (signal?.aborted || attempt >= this.o.maxRetries) throw e;
        await sleep(this.backoff(attempt), signal);
        continue;
      }
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.arrayBuffer();
        return { url: new URL(location, this.o.baseUrl).toString(), expires: res.headers.get('expires') };
      }
      const text = await res.text();
      if (res.ok) {
        // some servers answer the URL in a JSON body instead
        const j = (text ? JSON.parse(text) : {}) as { url?: string; expires?: string };
        if (typeof j.url === 'string') return { url: new URL(j.url, this.o.baseUrl).toString(), expires: j.expires ?? null };
        throw new TinkerHttpError(res.status, text, `GET ${path} (no archive URL in the answer)`);
      }
      if (!RETRYABLE(res.status) || attempt >= this.o.maxRetries) throw new TinkerHttpError(res.status, text, `GET ${path}`);
      await sleep(this.backoff(attempt, res), signal);
    }
  }

  /** Fetch a signed archive URL. The API key is not sent: the URL carries its own authorisation (often another host). */
  async download(url: string, signal?: AbortSignal): Promise<Buffer> {
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        this.requests++;
        res = await this.fetchFn(url, { signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(10 * this.o.timeoutMs)]) : AbortSignal.timeout(10 * this.o.timeoutMs) });
      } catch (e) {
        if (signal?.aborted || attempt >= this.o.maxRetries) throw e;
        await sleep(this.backoff(attempt), signal);
        continue;
      }
      if (res.ok) return Buffer.from(await res.arrayBuffer());
      const text = await res.text();
      if (!RETRYABLE(res.status) || attempt >= this.o.maxRetries) throw new TinkerHttpError(res.status, text, `download of a checkpoint archive (${new URL(url).host})`);
      await sleep(this.backoff(attempt, res), signal);
    }
  }

  /** Submit a compute call and wait for its result. */
  async compute(path: string, body: unknown, kind: ResultKind = 'other', o: { proto?: Uint8Array; signal?: AbortSignal } = {}): Promise<unknown> {
    const f = await this.submit(path, body, o);
    return this.retrieve(f.request_id, kind, o.signal);
  }

  async submit(path: string, body: unknown, o: { proto?: Uint8Array; signal?: AbortSignal } = {}): Promise<UntypedFuture> {
    const f = await this.call('POST', path, body, o) as UntypedFuture;
    if (typeof f?.request_id !== 'string' && typeof f?.request_id !== 'number') throw new Error(`${path}: the server answered without a request_id`);
    return { ...f, request_id: String(f.request_id) };
  }
}

/** A Tinker session: handshake, create_session, heartbeats, and the client-side counters. */
export class TinkerSession {
  readonly http: TinkerHttp;
  readonly id: string;
  readonly config: Record<string, unknown>;
  private modelSeq = 0;
  private samplerSeq = 0;
  private heartbeat: NodeJS.Timeout | null = null;
  private failingSince: number | null = null;

  private constructor(http: TinkerHttp, id: string, config: Record<string, unknown>) {
    this.http = http; this.id = id; this.config = config;
  }

  static async open(o: TinkerClientOptions): Promise<TinkerSession> {
    const http = new TinkerHttp(o);
    const config = await http.call('POST', '/api/v1/client/config', { sdk_version: SDK_VERSION }) as Record<string, unknown>;
    if (config.pjwt_auth_enabled === true) {
      // cloud: exchange the API key for a JWT and send that instead
      const t = await http.call('POST', '/api/v1/auth/token', {}) as { jwt?: string };
      if (typeof t.jwt !== 'string') throw new Error('the server asked for JWT auth but /auth/token gave no jwt');
      (http.o as { apiKey?: string }).apiKey = t.jwt;
    }
    const s = await http.call('POST', '/api/v1/create_session', { tags: ['openclaw-rl'], user_metadata: {}, sdk_version: SDK_VERSION, type: 'create_session' }) as { session_id?: string };
    if (typeof s.session_id !== 'string') throw new Error('create_session answered without a session_id');
    const session = new TinkerSession(http, s.session_id, config);
    session.startHeartbeat(o.log ?? (() => {}));
    return session;
  }

  nextModelSeq(): number { return this.modelSeq++; }

  nextSamplerSeq(): number { return this.samplerSeq++; }

  private startHeartbeat(log: (line: string) => void): void {
    this.heartbeat = setInterval(() => {
      fetch(`${this.http.o.baseUrl}/api/v1/session_heartbeat`, {
        method: 'POST', signal: AbortSignal.timeout(10_000),
        headers: { 'content-type': 'application/json', ...(this.http.o.apiKey ? { 'x-api-key': this.http.o.apiKey } : {}) },
        body: JSON.stringify({ session_id: this.id, type: 'session_heartbeat' }),
      }).then((r) => {
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        this.failingSince = null;
      }).catch((e) => {
        this.failingSince ??= Date.now();
        if (Date.now() - this.failingSince > 120_000) log(`tinker: session heartbeats have failed for ${Math.round((Date.now() - this.failingSince) / 1000)} s (${(e as Error).message})`);
      });
    }, this.http.o.heartbeatMs);
    this.heartbeat.unref();
  }

  close(): void { if (this.heartbeat) clearInterval(this.heartbeat); this.heartbeat = null; }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal!.reason); };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
