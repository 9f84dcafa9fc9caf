// The in-process environment pool: at most `capacity` leased environments, each alive while its
// holder heartbeats. A lease that misses heartbeats for `leaseTtlMs`, or whose environment throws
// or takes longer than `callTimeoutMs` on a call (crashed or hung), is reclaimed: the environment is
// closed in the background and every later call on the lease fails with LeaseLostError, so the
// episode is marked failed and never trained on.
import { randomUUID } from 'node:crypto';
import {
  PoolFullError, LeaseLostError, EnvRequestError,
  type EnvFactory, type EnvPool, type Environment, type PoolStats, type Task, type ResetResult, type ToolCallRequest, type Observation, type EvaluateRequest, type Evaluation,
} from './types.ts';

export interface LocalPoolOptions {
  capacity: number;
  /** a lease without a heartbeat (or call) for this long is reclaimed */
  leaseTtlMs: number;
  /** a single reset / exec_tool / evaluate taking longer than this marks the environment hung */
  callTimeoutMs: number;
  log: (line: string) => void;
}

export const LOCAL_POOL_DEFAULTS: LocalPoolOptions = { capacity: 16, leaseTtlMs: 60_000, callTimeoutMs: 120_000, log: () => {} };

interface Lease { id: string; taskKey: string; env: Environment; lastSeen: number; reset: boolean; busy: boolean }

export class LocalPool implements EnvPool {
  readonly o: LocalPoolOptions;
  readonly factory: EnvFactory;
  private readonly leases = new Map<string, Lease>();
  /** leases reclaimed or failed, with the reason (kept so their holder gets a clear error) */
  private readonly lost = new Map<string, string>();
  private readonly reaper: NodeJS.Timeout;
  private counts = { allocated: 0, completed: 0, failed: 0, reclaimed: 0 };
  private closed = false;

  constructor(factory: EnvFactory, o: Partial<LocalPoolOptions> = {}) {
    this.factory = factory;
    this.o = { ...LOCAL_POOL_DEFAULTS, ...o };
    this.reaper = setInterval(() => this.reap(), Math.max(50, Math.min(1000, this.o.leaseTtlMs / 4)));
    this.reaper.unref();
  }

  get heartbeatMs(): number { return Math.max(20, Math.floor(this.o.leaseTtlMs / 3)); }

  async allocate(taskKey: string, _requestId?: string): Promise<string> {
    if (this.closed) throw new LeaseLostError('the pool is shutting down');
    if (typeof taskKey !== 'string' || taskKey === '') throw new EnvRequestError('task_key must be a non-empty string');
    if (this.leases.size >= this.o.capacity) throw new PoolFullError(`all ${this.o.capacity} environments are leased; retry shortly`);
    const id = randomUUID();
    this.leases.set(id, { id, taskKey, env: this.factory.create(), lastSeen: Date.now(), reset: false, busy: false });
    this.counts.allocated++;
    return id;
  }

  private lease(id: string): Lease {
    const l = this.leases.get(id);
    if (l) { l.lastSeen = Date.now(); return l; }
    const why = this.lost.get(id);
    throw new LeaseLostError(why ? `lease ${id} was lost: ${why}` : `unknown lease '${id}'`);
  }

  async heartbeat(leaseId: string): Promise<void> { this.lease(leaseId); }

  /** Run one environment call under the hang timeout; a throw or a hang fails the lease. */
  private async call<T>(l: Lease, verb: string, f: () => Promise<T>): Promise<T> {
    if (l.busy) throw new EnvRequestError(`lease ${l.id} is already running a call; calls on one lease go one at a time`);
    l.busy = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const hung = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${verb} took longer than ${this.o.callTimeoutMs} ms (environment hung)`)), this.o.callTimeoutMs); });
      return await Promise.race([f(), hung]);
    } catch (e) {
      if (e instanceof EnvRequestError) throw e;
      this.fail(l, `${verb} failed: ${(e as Error).message}`);
      throw new LeaseLostError(`lease ${l.id} failed: ${verb}: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
      l.busy = false;
      l.lastSeen = Date.now();
    }
  }

  async reset(leaseId: string, task: Task): Promise<ResetResult> {
    const l = this.lease(leaseId);
    if (!task || typeof task !== 'object' || typeof task.key !== 'string') throw new EnvRequestError('task must be an object with a string key');
    const r = await this.call(l, 'reset', () => l.env.reset(task));
    l.reset = true;
    return r;
  }

  async execTool(leaseId: string, call: ToolCallRequest): Promise<Observation> {
    const l = this.lease(leaseId);
    if (!l.reset) throw new EnvRequestError('exec_tool before reset');
    if (!call || typeof call.name !== 'string') throw new EnvRequestError('tool_call must be {name, arguments}');
    return this.call(l, 'exec_tool', () => l.env.execTool({ name: call.name, arguments: call.arguments && typeof call.arguments === 'object' ? call.arguments : {} }));
  }

  async evaluate(leaseId: string, req: EvaluateRequest): Promise<Evaluation> {
    const l = this.lease(leaseId);
    if (!l.reset) throw new EnvRequestError('evaluate before reset');
    return this.call(l, 'evaluate', () => l.env.evaluate({ finalMessage: String(req?.finalMessage ?? ''), toolCalls: Number(req?.toolCalls ?? 0) }));
  }

  async close(leaseId: string): Promise<void> {
    const l = this.leases.get(leaseId);
    if (!l) return; // closing twice, or after a reclaim, is fine
    this.leases.delete(leaseId);
    this.counts.completed++;
    await l.env.close().catch((e) => this.o.log(`env pool: closing lease ${leaseId}: ${(e as Error).message}`));
  }

  private fail(l: Lease, reason: string): void {
    if (!this.leases.delete(l.id)) return;
    this.counts.failed++;
    this.remember(l.id, reason);
    this.o.log(`env pool: lease ${l.id} (${l.taskKey}) failed: ${reason}`);
    void l.env.close().catch(() => {});
  }

  private remember(id: string, reason: string): void {
    this.lost.set(id, reason);
    if (this.lost.size > 4096) this.lost.delete(this.lost.keys().next().value!);
  }

  /** Reclaim leases whose holder stopped heartbeating. */
  reap(now = Date.now()): number {
    let n = 0;
    for (const l of [...this.leases.values()]) {
      if (now - l.lastSeen <= this.o.leaseTtlMs || l.busy) continue;
      this.leases.delete(l.id);
      this.counts.reclaimed++;
      this.remember(l.id, `no heartbeat for ${this.o.leaseTtlMs} ms; reclaimed`);
      this.o.log(`env pool: lease ${l.id} (${l.taskKey}) reclaimed after ${now - l.lastSeen} ms without a heartbeat`);
      void l.env.close().catch(() => {});
      n++;
    }
    return n;
  }

  async stats(): Promise<PoolStats> {
    return { env: this.factory.name, capacity: this.o.capacity, active: this.leases.size, ...this.counts };
  }

  /** Close every environment (shutdown). */
  async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    const all = [...this.leases.values()];
    this.leases.clear();
    await Promise.all(all.map((l) => l.env.close().catch(() => {})));
  }
}
