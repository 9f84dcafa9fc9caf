// ServingEngine: sampling and scoring on an external serving engine (vLLM or SGLang, one
// ServingBackend each), training on a separate TrainingEngine (the embedded engine). The project
// renders and tokenizes; the server gets prompt token ids and answers sampled ids + log-probs,
// streamed as they come. Each saved version is written as a PEFT adapter and loaded under a new
// name (`policy-v17`); publishing switches new requests to it, and an older adapter is unloaded
// once its last in-flight request has finished, so no request is refused or cut during a swap.
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  EngineError, checkTokenIds, type TrainingEngine, type EngineInfo, type SampleEvent, type SampleParams, type ScoreOptions,
  type ScoreRequest, type Datum, type AdamParams, type ForwardBackwardMetrics, type OptimStepMetrics, type AdapterSelector,
  type LoraSettings, type Tokenizer, type FinishReason,
} from './types.ts';
import type { LossSpec } from '../learn/losses.ts';
import { SampleAssembler } from './sample-assembler.ts';

export type BackendEvent = { type: 'token'; id: number; logprob: number; top?: { id: number; logprob: number }[] } | { type: 'finish'; reason: FinishReason };

/** What the project needs from an external serving engine. */
export interface ServingBackend {
  readonly name: string;
  /** the base model's name on the server */
  readonly baseModel: string;
  /** Stream sampled ids with their log-probs; `adapter` null = the base model. */
  generate(promptIds: number[], params: SampleParams, adapter: string | null, signal?: AbortSignal): AsyncIterable<BackendEvent>;
  /** Log-probs of ids[from..] each given the ids before it (prompt log-probs, T = 1). */
  promptLogprobs(ids: number[], from: number, adapter: string | null): Promise<number[]>;
  loadAdapter(name: string, dir: string): Promise<void>;
  unloadAdapter(name: string): Promise<void>;
}

export class BackendError extends Error {
  override name = 'BackendError';
  readonly status: number;
  constructor(status: number, message: string) { super(message); this.status = status; }
}

interface LoadedAdapter { name: string; dir: string; inflight: number; unloading: boolean }

export interface ServingEngineOptions {
  /** where versions are written as PEFT adapter folders (the serving engine must read the same paths) */
  adapterDir: string;
  /** name prefix of loaded adapters (default 'policy' → policy-v17) */
  adapterPrefix?: string;
  log?: (line: string) => void;
}

export class ServingEngine implements TrainingEngine {
  readonly info: EngineInfo;
  readonly tokenizer: Tokenizer;
  readonly backend: ServingBackend;
  readonly trainer: TrainingEngine;
  private readonly o: Required<ServingEngineOptions>;
  private readonly loaded = new Map<number, LoadedAdapter>();
  private published = 0;
  private closed = false;

  constructor(backend: ServingBackend, trainer: TrainingEngine, o: ServingEngineOptions) {
    this.backend = backend; this.trainer = trainer;
    this.o = { adapterPrefix: 'policy', log: () => {}, ...o, adapterDir: resolve(o.adapterDir) };
    this.info = { ...trainer.info, kernel: backend.name, threads: 0 };
    this.tokenizer = trainer.tokenizer;
  }

  adapterName(version: number): string { return `${this.o.adapterPrefix}-v${version}`; }

  /** Adapter names currently loaded on the server, by version (tests and /admin). */
  loadedAdapters(): Record<number, string> { return Object.fromEntries([...this.loaded].map(([v, a]) => [v, a.name])); }

  // ---- serving ----

  async *sample(promptIds: number[], params: SampleParams, signal?: AbortSignal): AsyncGenerator<SampleEvent> {
    if (this.closed) throw new EngineError('closed', 'the engine has stopped');
    if (promptIds.length === 0) throw new EngineError('bad_request', 'the prompt has no tokens');
    checkTokenIds(promptIds, this.info.vocabSize, 'prompt token id');
    if (promptIds.length >= this.info.contextLength) throw new EngineError('context_length_exceeded', `the prompt has ${promptIds.length} tokens; this model's context is ${this.info.contextLength} tokens, and at least one must remain for the answer`);
    const version = params.weights === 'base' ? 0 : typeof params.weights === 'number' ? params.weights : this.published;
    const adapter = version === 0 ? null : this.loaded.get(version);
    if (version !== 0 && (!adapter || adapter.unloading)) throw new EngineError('bad_request', `weights version ${version} is not loaded on the ${this.backend.name} server`);
    // the request holds its adapter until it ends, however it ends
    if (adapter) adapter.inflight++;
    const asm = new SampleAssembler(this.tokenizer, promptIds, params, this.info.eosTokenIds);
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let reason: FinishReason = 'stop';
    try {
      try {
        for await (const ev of this.backend.generate(promptIds, params, adapter?.name ?? null, stop.signal)) {
          if (ev.type === 'finish') { reason = ev.reason; break; }
          const ready = asm.push(ev.id, ev.logprob, ev.top);
          if (ready) yield { type: 'token', token: ready };
          if (asm.ended) break;
        }
      } catch (e) {
        if (!signal?.aborted) throw this.wrap(e, 'sampling');
      }
      if (signal?.aborted) reason = 'abort';
      const { last, result } = asm.finish(reason, promptIds.length, version);
      if (last) yield { type: 'token', token: last };
      yield { type: 'done', result };
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', onAbort);
      if (adapter) { adapter.inflight--; this.collect(); }
    }
  }

  /**
   * Teacher and reference scoring through the server's prompt log-probs. The adapter being trained
   * ('current') and temperatures other than 1 are scored by the trainer, which has both exactly.
   */
  async score(requests: ScoreRequest[], opts: ScoreOptions = {}): Promise<Float32Array[]> {
    const sel = opts.adapter ?? 'published';
    if (sel === 'current' || (opts.temperature ?? 1) !== 1) return this.trainer.score(requests, opts);
    const version = sel === 'base' ? 0 : sel === 'published' ? this.published : sel;
    const adapter = version === 0 ? null : this.loaded.get(version);
    if (version !== 0 && !adapter) throw new EngineError('bad_request', `weights version ${version} is not loaded on the ${this.backend.name} server`);
    for (const { promptIds, responseIds } of requests) {
      if (promptIds.length === 0) throw new EngineError('bad_request', 'scoring needs at least one prompt token');
      if (promptIds.length + responseIds.length - 1 > this.info.contextLength) throw new EngineError('context_length_exceeded', `prompt + response is ${promptIds.length + responseIds.length} tokens; this model's context is ${this.info.contextLength}`);
      checkTokenIds(promptIds, this.info.vocabSize); checkTokenIds(responseIds, this.info.vocabSize);
    }
    if (adapter) adapter.inflight++;
    try {
      return await Promise.all(requests.map(async ({ promptIds, responseIds }) => {
        if (responseIds.length === 0) return new Float32Array(0);
        const lps = await this.backend.promptLogprobs([...promptIds, ...responseIds], promptIds.length, adapter?.name ?? null);
        if (lps.length !== responseIds.length) throw new EngineError('internal', `the ${this.backend.name} server returned ${lps.length} prompt log-probs for ${responseIds.length} tokens`);
        return Float32Array.from(lps);
      }));
    } catch (e) {
      throw this.wrap(e, 'scoring');
    } finally {
      if (adapter) { adapter.inflight--; this.collect(); }
    }
  }

  private wrap(e: unknown, what: string): EngineError {
    if (e instanceof EngineError) return e;
    if (e instanceof BackendError && e.status >= 400 && e.status < 500) return new EngineError('bad_request', `${what} on ${this.backend.name}: ${e.message}`);
    return new EngineError('internal', `${what} on ${this.backend.name}: ${(e as Error).message}`);
  }

  // ---- versions ----

  /** Write version `v` as a PEFT adapter and load it on the server under its own name. */
  private async export(v: number): Promise<void> {
    const name = this.adapterName(v), dir = join(this.o.adapterDir, name);
    await this.trainer.saveAdapter(dir, v);
    try {
      await this.backend.loadAdapter(name, dir);
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw this.wrap(e, `loading adapter ${name}`);
    }
    this.loaded.set(v, { name, dir, inflight: 0, unloading: false });
  }

  /** Unload adapters older than the published one once no request uses them. */
  private collect(): void {
    for (const [v, a] of this.loaded) {
      if (v >= this.published || a.inflight > 0 || a.unloading) continue;
      a.unloading = true;
      this.backend.unloadAdapter(a.name).then(() => {
        this.loaded.delete(v);
        rmSync(a.dir, { recursive: true, force: true });
      }, (e) => {
        a.unloading = false;
        this.o.log(`${this.backend.name}: could not unload ${a.name}: ${(e as Error).message}`);
      });
    }
  }

  async saveWeights(opts: { atLeast?: number } = {}): Promise<number> {
    const v = await this.trainer.saveWeights(opts);
    await this.export(v);
    return v;
  }

  async publish(version: number): Promise<void> {
    if (version !== 0 && !this.loaded.has(version)) throw new EngineError('bad_request', `weights version ${version} is not loaded on the ${this.backend.name} server`);
    await this.trainer.publish(version);
    this.published = version;
    this.collect();
  }

  async loadAdapter(dir: string): Promise<number> {
    const v = await this.trainer.loadAdapter(dir);
    await this.export(v);
    return v;
  }

  async loadTrainingState(dir: string): Promise<number> {
    const v = await this.trainer.loadTrainingState(dir);
    await this.export(v);
    return v;
  }

  async versions(): Promise<{ published: number; live: number[]; optimizerStep: number | null }> {
    const t = await this.trainer.versions();
    return { published: this.published, live: [0, ...[...this.loaded.keys()].sort((a, b) => a - b)], optimizerStep: t.optimizerStep };
  }

  // ---- training: the trainer's ----

  configureTraining(lora?: LoraSettings | null): Promise<void> {
    // versions reach the server as LoRA adapters; full-parameter versions would need a full weights reload
    if (lora === null) return Promise.reject(new EngineError('bad_request', `full-parameter training cannot be served through ${this.backend.name} yet (versions are loaded as LoRA adapters): train LoRA, or serve the merged model with --engine embedded`));
    return this.trainer.configureTraining(lora);
  }
  forwardBackward(data: Datum[], loss: LossSpec): Promise<ForwardBackwardMetrics> { return this.trainer.forwardBackward(data, loss); }
  optimStep(adam: AdamParams): Promise<OptimStepMetrics> { return this.trainer.optimStep(adam); }
  saveAdapter(dir: string, adapter?: AdapterSelector): Promise<void> { return this.trainer.saveAdapter(dir, adapter); }
  saveModel(dir: string, weights?: AdapterSelector): Promise<void> { return this.trainer.saveModel(dir, weights); }
  saveTrainingState(dir: string): Promise<void> { return this.trainer.saveTrainingState(dir); }

  async close(): Promise<void> {
    this.closed = true;
    await this.trainer.close();
  }
}

// ---- shared HTTP helpers for the backends ----

export async function* sseEvents(res: Response): AsyncGenerator<unknown> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data === '[DONE]') return;
      if (data) yield JSON.parse(data);
    }
  }
}

export async function postJson(fetchFn: typeof fetch, url: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  const res = await fetchFn(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });
  if (!res.ok) {
    const text = await res.text();
    let message = text;
    try { const j = JSON.parse(text); message = j.error?.message ?? j.message ?? j.detail ?? j.error_message ?? text; } catch { /* plain text */ }
    throw new BackendError(res.status, `${url.replace(/^https?:\/\/[^/]+/, '')}: HTTP ${res.status}: ${String(message).slice(0, 500)}`);
  }
  return res;
}
