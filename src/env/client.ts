// Client side of the pool protocol: HttpPool talks to one env server; EnvRouter spreads tasks over
// several by a hash of the task key (sha1(task_key) mod N, as upstream's router does) and rewrites
// lease ids as "<server index>:<lease>". When a task's server is full or unreachable the router tries
// the next ones in order, so a dead server fails only the leases it held: new episodes go elsewhere.
import { createHash } from 'node:crypto';
import {
  PoolFullError, LeaseLostError, EnvRequestError,
  type EnvPool, type PoolStats, type Task, type ResetResult, type ToolCallRequest, type Observation, type EvaluateRequest, type Evaluation,
} from './types.ts';

/** The server could not be reached at all (connection refused, reset, timed out). */
export class EnvServerUnreachable extends Error { override name = 'EnvServerUnreachable'; }

export class HttpPool implements EnvPool {
  readonly url: string;
  readonly timeoutMs: number;
  heartbeatMs = 10_000;

  constructor(url: string, timeoutMs = 180_000) { this.url = url.replace(/\/+$/, ''); this.timeoutMs = timeoutMs; }

  private async post(path: string, body: object, method = 'POST'): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method, headers: method === 'POST' ? { 'content-type': 'application/json' } : {}, body: method === 'POST' ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new EnvServerUnreachable(`env server ${this.url} unreachable: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    let json: { ok?: boolean; error?: { message?: string } } & Record<string, unknown>;
    try { json = await res.json() as never; } catch { throw new EnvServerUnreachable(`env server ${this.url} sent a non-JSON reply (HTTP ${res.status}) to ${path}`); }
    if (res.ok && json.ok) return json;
    const msg = `${path}: ${json.error?.message ?? `HTTP ${res.status}`}`;
    if (res.status === 429) throw new PoolFullError(msg);
    if (res.status === 410) throw new LeaseLostError(msg);
    if (res.status === 400 || res.status === 404 || res.status === 413) throw new EnvRequestError(msg);
    throw new LeaseLostError(msg);
  }

  /** Calls on a lease whose server vanished: the lease is lost with it. */
  private async onLease<T>(f: () => Promise<T>): Promise<T> {
    try { return await f(); } catch (e) {
      if (e instanceof EnvServerUnreachable) throw new LeaseLostError(e.message);
      throw e;
    }
  }

  async allocate(taskKey: string, requestId?: string): Promise<string> {
    const r = await this.post('/allocate', { task_key: taskKey, request_id: requestId });
    if (typeof r.heartbeat_ms === 'number') this.heartbeatMs = r.heartbeat_ms;
    return String(r.lease_id);
  }
  heartbeat(leaseId: string): Promise<void> { return this.onLease(async () => { await this.post('/heartbeat', { lease_id: leaseId }); }); }
  reset(leaseId: string, task: Task): Promise<ResetResult> {
    return this.onLease(async () => {
      const r = await this.post('/reset', { lease_id: leaseId, task_meta: task });
      return { user: String(r.user_msg ?? ''), system: String(r.system_msg ?? ''), tools: (r.tool_schemas ?? []) as never, maxToolCalls: Number(r.max_tool_calls ?? 16) };
    });
  }
  execTool(leaseId: string, call: ToolCallRequest): Promise<Observation> {
    return this.onLease(async () => {
      const r = await this.post('/exec_tool', { lease_id: leaseId, tool_call: call });
      return { content: String(r.observation ?? ''), error: r.error === true, done: r.done === true };
    });
  }
  evaluate(leaseId: string, req: EvaluateRequest): Promise<Evaluation> {
    return this.onLease(async () => {
      const r = await this.post('/evaluate', { lease_id: leaseId, final_message: req.finalMessage, tool_calls: req.toolCalls });
      return { score: Number(r.score), success: r.success === true, passed: (r.passed as number | null) ?? undefined, total: (r.total as number | null) ?? undefined, detail: (r.detail as string | null) ?? undefined };
    });
  }
  close(leaseId: string): Promise<void> { return this.onLease(async () => { await this.post('/close', { lease_id: leaseId }); }); }
  async stats(): Promise<PoolStats> { return (await this.post('/stats', {}, 'GET')).stats as PoolStats; }
}

/** Which server a task key belongs to: sha1(key) mod n. */
export function serverIndex(taskKey: string, n: number): number {
  const h = createHash('sha1').update(taskKey).digest();
  return h.readUInt32BE(0) % n;
}

export class EnvRouter implements EnvPool {
  readonly pools: EnvPool[];
  /** a server that could not be reached is skipped for this long */
  readonly retryDeadMs: number;
  private readonly deadUntil: number[];

  constructor(pools: EnvPool[], retryDeadMs = 5000) {
    if (pools.length === 0) throw new EnvRequestError('the router needs at least one env server');
    this.pools = pools;
    this.retryDeadMs = retryDeadMs;
    this.deadUntil = pools.map(() => 0);
  }

  static over(urls: string[]): EnvRouter { return new EnvRouter(urls.map((u) => new HttpPool(u))); }

  get heartbeatMs(): number { return Math.min(...this.pools.map((p) => p.heartbeatMs)); }

  async allocate(taskKey: string, requestId?: string): Promise<string> {
    const n = this.pools.length;
    const first = serverIndex(taskKey, n);
    let full: Error | null = null;
    let unreachable: Error | null = null;
    for (let k = 0; k < n; k++) {
      const i = (first + k) % n;
      if (this.deadUntil[i] > Date.now()) continue;
      try {
        return `${i}:${await this.pools[i].allocate(taskKey, requestId)}`;
      } catch (e) {
        if (e instanceof PoolFullError) { full = e; continue; }
        if (e instanceof EnvServerUnreachable) { unreachable = e; this.deadUntil[i] = Date.now() + this.retryDeadMs; continue; }
        throw e;
      }
    }
    if (full) throw new PoolFullError(`every reachable env server is full (${full.message})`);
    throw new EnvServerUnreachable(unreachable ? `no env server reachable (${unreachable.message})` : 'no env server reachable (all marked down; retrying soon)');
  }

  private split(leaseId: string): [EnvPool, string] {
    const m = /^(\d+):(.+)$/.exec(leaseId);
    const pool = m ? this.pools[Number(m[1])] : undefined;
    if (!m || !pool) throw new EnvRequestError(`lease id '${leaseId}' is not a router lease ("<server>:<lease>")`);
    return [pool, m[2]];
  }

  async heartbeat(leaseId: string): Promise<void> { const [p, l] = this.split(leaseId); return p.heartbeat(l); }
  async reset(leaseId: string, task: Task): Promise<ResetResult> { const [p, l] = this.split(leaseId); return p.reset(l, task); }
  async execTool(leaseId: string, call: ToolCallRequest): Promise<Observation> { const [p, l] = this.split(leaseId); return p.execTool(l, call); }
  async evaluate(leaseId: string, req: EvaluateRequest): Promise<Evaluation> { const [p, l] = this.split(leaseId); return p.evaluate(l, req); }
  async close(leaseId: string): Promise<void> { const [p, l] = this.split(leaseId); return p.close(l); }

  async stats(): Promise<PoolStats> {
    const all = await Promise.all(this.pools.map((p) => p.stats().catch(() => null)));
    const live = all.filter((s): s is PoolStats => s !== null);
    const sum = (k: keyof Omit<PoolStats, 'env'>) => live.reduce((a, s) => a + s[k], 0);
    return { env: live[0]?.env ?? 'unknown', capacity: sum('capacity'), active: sum('active'), allocated: sum('allocated'), completed: sum('completed'), failed: sum('failed'), reclaimed: sum('reclaimed') };
  }
}
