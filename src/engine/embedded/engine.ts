// EmbeddedEngine: the Engine interface on the caller's thread, backed by the engine worker.
// The tokenizer is loaded here as well, so rendering prompts and parsing outputs cost the worker nothing.
import { Worker } from 'node:worker_threads';
import { resolve } from 'node:path';
import { ChatTokenizer } from './tokenizer.ts';
import { loadConfig } from './config.ts';
import { ModelFileError } from './safetensors.ts';
import type { RuntimeOptions, RuntimeStats } from './runtime.ts';
import type { JobName } from './worker.ts';
import type { LossSpec } from '../../learn/losses.ts';
import {
  EngineError, type TrainingEngine, type EngineInfo, type SampleEvent, type SampleParams, type ScoreOptions, type ScoreRequest, type TopKScoreRequest, type TopKScore,
  type Datum, type AdamParams, type ForwardBackwardMetrics, type OptimStepMetrics, type AdapterSelector, type LoraSettings,
} from '../types.ts';

const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

type Pending =
  | { kind: 'sample'; push: (ev: SampleEvent | Error) => void }
  | { kind: 'job'; resolve: (v: never) => void; reject: (e: Error) => void };

export type EmbeddedEngineOptions = RuntimeOptions;

export class EmbeddedEngine implements TrainingEngine {
  readonly info: EngineInfo;
  readonly tokenizer: ChatTokenizer;
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  private constructor(worker: Worker, info: EngineInfo, tokenizer: ChatTokenizer) {
    this.worker = worker; this.info = info; this.tokenizer = tokenizer;
    worker.on('message', (m) => this.onMessage(m));
    worker.on('error', (e) => this.failAll(new EngineError('internal', `engine thread crashed: ${e.message}`)));
    worker.on('exit', () => this.failAll(new EngineError('closed', 'the engine has stopped')));
  }

  static async load(dir: string, opts: EmbeddedEngineOptions = {}): Promise<EmbeddedEngine> {
    dir = resolve(dir);
    loadConfig(dir); // fail fast, on this thread, with the clear message
    const tokenizer = ChatTokenizer.load(dir);
    const worker = new Worker(new URL(`./worker${EXT}`, import.meta.url), { workerData: { dir, opts } });
    const info = await new Promise<EngineInfo>((res, rej) => {
      const onMsg = (m: { op: string; info?: EngineInfo; name?: string; message?: string }) => {
        if (m.op === 'ready') { worker.off('message', onMsg); res(m.info!); }
        else if (m.op === 'fatal') { worker.off('message', onMsg); rej(m.name === 'ModelFileError' ? new ModelFileError(m.message!) : new Error(m.message)); }
      };
      worker.on('message', onMsg);
      worker.once('error', rej);
    });
    return new EmbeddedEngine(worker, info, tokenizer);
  }

  private onMessage(m: { op: string; id?: number; events?: { id: number; token?: unknown; result?: unknown }[]; value?: unknown; error?: { message: string; code: EngineError['code'] } }): void {
    if (m.op === 'step') {
      for (const ev of m.events!) {
        const p = this.pending.get(ev.id);
        if (p?.kind !== 'sample') continue;
        if (ev.token) p.push({ type: 'token', token: ev.token as never });
        if (ev.result) { p.push({ type: 'done', result: ev.result as never }); this.pending.delete(ev.id); }
      }
    } else if (m.op === 'result') {
      const p = this.pending.get(m.id!);
      if (p?.kind === 'job') { p.resolve(m.value as never); this.pending.delete(m.id!); }
    } else if (m.op === 'error') {
      const p = this.pending.get(m.id!);
      const err = new EngineError(m.error!.code in { bad_request: 1, context_length_exceeded: 1 } ? m.error!.code : 'internal', m.error!.message);
      if (!p) return;
      if (p.kind === 'sample') p.push(err); else p.reject(err);
      this.pending.delete(m.id!);
    }
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) { if (p.kind === 'sample') p.push(err); else p.reject(err); }
    this.pending.clear();
    this.closed = true;
  }

  async *sample(promptIds: number[], params: SampleParams, signal?: AbortSignal): AsyncGenerator<SampleEvent> {
    if (this.closed) throw new EngineError('closed', 'the engine has stopped');
    const id = this.nextId++;
    const queue: (SampleEvent | Error)[] = [];
    let wake: (() => void) | null = null;
    this.pending.set(id, { kind: 'sample', push: (ev) => { queue.push(ev); wake?.(); } });
    const onAbort = () => this.worker.postMessage({ op: 'abort', id });
    signal?.addEventListener('abort', onAbort, { once: true });
    this.worker.postMessage({ op: 'sample', id, promptIds, params });
    if (signal?.aborted) onAbort();
    let finished = false;
    try {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        wake = null;
        const ev = queue.shift()!;
        if (ev instanceof Error) { finished = true; throw ev; }
        yield ev;
        if (ev.type === 'done') { finished = true; return; }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // a consumer that stops iterating early aborts the generation
      if (!finished) { this.worker.postMessage({ op: 'abort', id }); this.pending.delete(id); }
    }
  }

  /** Run a job on the engine thread (queued behind earlier jobs, interleaved with sampling). */
  private job<T>(name: JobName, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new EngineError('closed', 'the engine has stopped'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { kind: 'job', resolve: resolve as (v: never) => void, reject });
      this.worker.postMessage({ op: 'job', id, name, args });
    });
  }

  score(requests: ScoreRequest[], opts: ScoreOptions = {}): Promise<Float32Array[]> { return this.job('score', requests, opts); }
  scoreTopK(requests: TopKScoreRequest[], k: number, opts: ScoreOptions = {}): Promise<TopKScore[]> { return this.job('scoreTopK', requests, k, opts); }
  configureTraining(lora: LoraSettings | null = {}): Promise<void> { return this.job('configureTraining', lora); }
  forwardBackward(data: Datum[], loss: LossSpec): Promise<ForwardBackwardMetrics> { return this.job('forwardBackward', data, loss); }
  optimStep(adam: AdamParams): Promise<OptimStepMetrics> { return this.job('optimStep', adam); }
  saveWeights(opts: { atLeast?: number } = {}): Promise<number> { return this.job('saveWeights', opts); }
  publish(version: number): Promise<void> { return this.job('publish', version); }
  saveAdapter(dir: string, adapter: AdapterSelector = 'published'): Promise<void> { return this.job('saveAdapter', resolve(dir), adapter); }
  saveModel(dir: string, weights: AdapterSelector = 'published'): Promise<void> { return this.job('saveModel', resolve(dir), weights); }
  loadAdapter(dir: string): Promise<number> { return this.job('loadAdapter', resolve(dir)); }
  saveTrainingState(dir: string): Promise<void> { return this.job('saveTrainingState', resolve(dir)); }
  loadTrainingState(dir: string): Promise<number> { return this.job('loadTrainingState', resolve(dir)); }
  versions(): Promise<{ published: number; live: number[]; optimizerStep: number | null }> { return this.job('versions'); }
  /** Prefix-cache and KV-memory figures (answered between steps, so cheap to poll). */
  stats(): Promise<RuntimeStats> { return this.job('stats'); }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((res) => {
      this.worker.once('exit', () => res());
      this.worker.postMessage({ op: 'close' });
      setTimeout(() => void this.worker.terminate(), 5000).unref();
    });
  }
}

/** Prometheus lines for the engine's prefix cache and KV memory (for the server's /metrics). */
export function engineStatsMetrics(s: RuntimeStats): string {
  const pc = s.prefixCache;
  const m = (name: string, type: 'gauge' | 'counter', help: string, v: number) => `# HELP openclaw_rl_${name} ${help}\n# TYPE openclaw_rl_${name} ${type}\nopenclaw_rl_${name} ${v}`;
  return [
    m('prefix_cache_bytes', 'gauge', 'Bytes of KV held by the prefix cache.', pc.bytes),
    m('prefix_cache_budget_bytes', 'gauge', 'Byte budget of the prefix cache.', pc.budgetBytes),
    m('prefix_cache_entries', 'gauge', 'Cached prefixes.', pc.entries),
    m('prefix_cache_tokens', 'gauge', 'Token positions held by the prefix cache.', pc.cachedTokens),
    m('prefix_cache_lookups_total', 'counter', 'Prompts looked up in the prefix cache.', pc.lookups),
    m('prefix_cache_hits_total', 'counter', 'Lookups that reused a cached prefix.', pc.hits),
    m('prefix_cache_reused_tokens_total', 'counter', 'Prompt positions served from the prefix cache.', pc.reusedTokens),
    m('prefix_cache_looked_up_tokens_total', 'counter', 'Prompt positions looked up (the hit rate is reused / looked up).', pc.lookedUpTokens),
    m('prefix_cache_evictions_total', 'counter', 'Prefixes evicted to stay within the budget or make room for requests.', pc.evictions),
    m('kv_budget_bytes', 'gauge', 'Memory for KV caches beside the weights.', s.kvBudgetBytes),
    m('kv_live_bytes', 'gauge', 'KV bytes planned by running requests and scoring passes.', s.liveKvBytes),
    m('context_length', 'gauge', 'Longest context the engine admits (what fits in memory).', s.contextLength),
    m('kv_reserved_bytes', 'gauge', 'Bytes of bf16 KV pages made so far, in use or pooled (0 with f32 KV in the WebAssembly memory).', s.kvReservedBytes),
  ].join('\n') + '\n';
}
