// The embedded engine inside one thread: model + tokenizer + a batch scheduler. Every step runs
// one forward pass over the prompts of newly admitted sequences and the last token of every
// decoding sequence, so concurrent requests share each pass over the weights.
// The worker (engine/embedded/worker.ts) drives this; tests may use it directly.
import { basename } from 'node:path';
import { Transformer, type LoadOptions, type BatchItem } from './model.ts';
import { ChatTokenizer } from './tokenizer.ts';
import type { KvCache } from './kv-cache.ts';
import { sampleToken, topIndices } from './sampler.ts';
import { logSumExp } from './ops/logits.ts';
import { Rng, randomSeed } from './rng.ts';
import { IncrementalDecoder, StopMatcher } from './detokenize.ts';
import { scoreResponses } from './score.ts';
import { LoraTrainer } from './trainer.ts';
import type { LoraAdapter, LoraConfig } from './lora.ts';
import { saveAdapter, loadAdapter, saveTrainingState, loadTrainingState } from './peft.ts';
import type { LossSpec } from '../../learn/losses.ts';
import { EngineError, checkTokenIds, type EngineInfo, type SampleParams, type SampleResult, type SampledToken, type ScoreRequest, type ScoreOptions, type AdapterSelector, type Datum, type ForwardBackwardMetrics, type OptimStepMetrics, type AdamParams } from '../types.ts';

export interface Sequence {
  readonly key: number;
  /** the weights version this sequence is served by, from admission to the end */
  readonly version: number;
  readonly adapter: LoraAdapter | null;
  readonly promptIds: number[];
  readonly params: SampleParams;
  readonly cache: KvCache;
  readonly ids: number[];
  readonly logprobs: number[];
  readonly rng: Rng;
  readonly decoder: IncrementalDecoder;
  readonly stops: StopMatcher;
  readonly stopIds: Set<number>;
  prefilled: boolean;
  aborted: boolean;
  /** text released when the sequence finished (held back until then) */
  tail: string;
  result: SampleResult | null;
}

export interface StepOutput { key: number; token: SampledToken | null; result: SampleResult | null }

/** Largest number of prompt tokens admitted into one step (bounds a step's latency and memory). */
const PREFILL_BUDGET = 2048;
/** A saved set of weights: version 0 is the base model (no adapter). */
interface WeightsVersion { adapter: LoraAdapter | null; refs: number }

export class EmbeddedRuntime {
  readonly model: Transformer;
  readonly tokenizer: ChatTokenizer;
  readonly info: EngineInfo;
  /** the version new requests are served with */
  published = 0;
  trainer: LoraTrainer | null = null;
  private readonly versions = new Map<number, WeightsVersion>([[0, { adapter: null, refs: 0 }]]);
  private latestVersion = 0;
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private nextKey = 1;

  constructor(dir: string, opts: LoadOptions & { modelId?: string } = {}) {
    this.model = Transformer.load(dir, opts);
    this.tokenizer = ChatTokenizer.load(dir);
    const { cfg, weights, kernel } = this.model;
    this.info = {
      modelId: opts.modelId ?? basename(dir.replace(/\/+$/, '')),
      modelType: cfg.modelType,
      contextLength: this.model.maxContext,
      vocabSize: cfg.vocabSize,
      eosTokenIds: cfg.eosTokenIds,
      kernel: kernel.name,
      threads: kernel.threads,
      weightBytes: weights.bytes,
      sourceDtypes: weights.sourceDtypes,
    };
  }

  get busy(): boolean { return this.waiting.length + this.running.length > 0; }

  /** Queue a generation; returns its key. Throws EngineError for prompts the model cannot take. */
  add(promptIds: number[], params: SampleParams): number {
    if (promptIds.length === 0) throw new EngineError('bad_request', 'the prompt has no tokens');
    const V = this.model.cfg.vocabSize;
    checkTokenIds(promptIds, V, 'prompt token id');
    if (promptIds.length >= this.model.maxContext) {
      throw new EngineError('context_length_exceeded', `the prompt has ${promptIds.length} tokens; this model's context is ${this.model.maxContext} tokens, and at least one must remain for the answer`);
    }
    const key = this.nextKey++;
    const version = params.weights === 'base' ? 0 : typeof params.weights === 'number' ? params.weights : this.published;
    const pinned = this.versions.get(version);
    if (!pinned) throw new EngineError('bad_request', `weights version ${version} does not exist (or was freed: only published, newer and in-use versions are kept)`);
    pinned.refs++;
    const stopIds = new Set<number>(params.stopTokenIds ?? []);
    if (!params.ignoreEos) for (const id of this.model.cfg.eosTokenIds) stopIds.add(id);
    this.waiting.push({
      key, version, adapter: pinned.adapter, promptIds, params, cache: this.model.newCache(), ids: [], logprobs: [],
      rng: new Rng(params.seed ?? randomSeed()), decoder: new IncrementalDecoder(this.tokenizer, promptIds),
      stops: new StopMatcher(params.stop ?? []), stopIds, prefilled: false, aborted: false, tail: '', result: null,
    });
    return key;
  }

  abort(key: number): void {
    for (const s of [...this.waiting, ...this.running]) if (s.key === key) s.aborted = true;
  }

  /** One forward pass: admits waiting prompts (within the prefill budget) and decodes one token for every running sequence. */
  step(): StepOutput[] {
    const out: StepOutput[] = [];
    // retire aborted sequences first
    for (const list of [this.waiting, this.running]) {
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].aborted) { out.push({ key: list[i].key, token: null, result: this.finish(list[i], 'abort') }); list.splice(i, 1); }
      }
    }
    // normal requests first (in arrival order); a low-priority one only when none waits, one at a time
    let budget = PREFILL_BUDGET;
    const lowRunning = this.running.some((s) => s.params.priority === 'low');
    for (let i = 0; i < this.waiting.length;) {
      const s = this.waiting[i];
      const low = s.params.priority === 'low';
      if (low && (lowRunning || this.waiting.some((w) => w.params.priority !== 'low'))) { i++; continue; }
      if (budget < s.promptIds.length && !(this.running.length === 0 && budget === PREFILL_BUDGET)) break;
      this.waiting.splice(i, 1);
      budget -= s.promptIds.length;
      this.running.push(s);
      if (low) break;
    }
    if (this.running.length === 0) return out;

    const items: BatchItem[] = this.running.map((s) => ({ tokens: s.prefilled ? [s.ids[s.ids.length - 1]] : s.promptIds, cache: s.cache, adapter: s.adapter }));
    const hidden = this.model.forward(items);
    const { hiddenSize: H, vocabSize: V } = this.model.cfg;
    const n = items.length;
    const last = this.model.arena.alloc(n * H);
    let row = 0;
    items.forEach((it, i) => { row += it.tokens.length; last.set(hidden.subarray((row - 1) * H, row * H), i * H); });
    const logits = this.model.arena.alloc(n * V);
    this.model.logits(logits, last, n);

    for (let i = 0; i < n; i++) {
      const s = this.running[i];
      s.prefilled = true;
      const c = sampleToken(logits, i * V, V, s.params, () => s.rng.next());
      s.ids.push(c.id);
      s.logprobs.push(c.logprob);
      const isStopId = s.stopIds.has(c.id);
      let text = isStopId ? '' : s.stops.push(s.decoder.push(c.id));
      if (isStopId) s.result = this.finish(s, 'stop', c.id);
      else if (s.stops.matched !== null) s.result = this.finish(s, 'stop', s.stops.matched);
      else if (s.ids.length >= s.params.maxTokens || s.cache.length + 1 > this.model.maxContext) s.result = this.finish(s, 'length');
      if (s.result) text += s.tail;
      const token: SampledToken = { id: c.id, logprob: c.logprob, text };
      if (s.params.topLogprobs) {
        const invT = s.params.temperature > 0 ? 1 / s.params.temperature : 1;
        const lse = logSumExp(logits, i * V, V, invT);
        token.top = topIndices(logits, i * V, V, s.params.topLogprobs).map((id) => ({ id, logprob: logits[i * V + id] * invT - lse }));
      }
      out.push({ key: s.key, token, result: null });
    }
    this.model.arena.free(last);
    this.model.arena.free(logits);
    for (let i = this.running.length - 1; i >= 0; i--) {
      const s = this.running[i];
      if (s.result) { out.push({ key: s.key, token: null, result: s.result }); this.running.splice(i, 1); }
    }
    return out;
  }

  private finish(s: Sequence, reason: SampleResult['finishReason'], stoppedBy?: number | string): SampleResult {
    if (reason !== 'abort' && s.stops.matched === null) {
      // release what an incomplete character or a possible stop-string prefix held back
      s.tail = s.stops.push(s.decoder.flush());
      if (s.stops.matched === null) s.tail += s.stops.flush();
      else stoppedBy = s.stops.matched;
    }
    s.cache.release();
    this.versions.get(s.version)!.refs--;
    this.collectVersions();
    return { ids: s.ids, logprobs: s.logprobs, text: s.stops.fullText, finishReason: reason, stoppedBy, promptTokens: s.promptIds.length, policyVersion: s.version };
  }

  /** Run one sequence to completion on this thread (tests, CLI). */
  generate(promptIds: number[], params: SampleParams, onToken?: (t: SampledToken) => void): SampleResult {
    const key = this.add(promptIds, params);
    for (;;) {
      for (const o of this.step()) {
        if (o.key !== key) continue;
        if (o.token && onToken) onToken(o.token);
        if (o.result) return o.result;
      }
    }
  }

  /** Teacher-forced log-probs of each response token (see ScoreOptions; default: the published weights). */
  score(requests: ScoreRequest[], opts: ScoreOptions = {}): Float32Array[] {
    const V = this.model.cfg.vocabSize;
    for (const { promptIds, responseIds } of requests) {
      if (promptIds.length === 0) throw new EngineError('bad_request', 'scoring needs at least one prompt token');
      const total = promptIds.length + responseIds.length;
      if (total - 1 > this.model.maxContext) throw new EngineError('context_length_exceeded', `prompt + response is ${total} tokens; this model's context is ${this.model.maxContext}`);
      checkTokenIds(promptIds, V);
      checkTokenIds(responseIds, V);
    }
    return scoreResponses(this.model, requests, this.adapterFor(opts.adapter ?? 'published'), opts.temperature ?? 1);
  }

  // ---- weights versions ----

  adapterFor(sel: AdapterSelector): LoraAdapter | null {
    if (sel === 'base') return null;
    if (sel === 'current') {
      if (!this.trainer) throw new EngineError('bad_request', "no adapter is being trained: 'current' needs configureTraining first");
      return this.trainer.adapter;
    }
    const v = sel === 'published' ? this.published : sel;
    const found = this.versions.get(v);
    if (!found) throw new EngineError('bad_request', `weights version ${v} does not exist (or was freed: only published, newer and in-use versions are kept)`);
    return found.adapter;
  }

  /** Versions whose adapter memory is held (for tests and /metrics). */
  get liveVersions(): number[] { return [...this.versions.keys()].sort((a, b) => a - b); }

  /** Add an adapter as a new version (not yet published). */
  private addVersion(adapter: LoraAdapter | null): number {
    const v = ++this.latestVersion;
    this.versions.set(v, { adapter, refs: 0 });
    return v;
  }

  /** Snapshot the trained adapter as version v+1; requests keep using the published one until publish(v+1). */
  saveWeights(): number {
    if (!this.trainer) throw new EngineError('bad_request', 'nothing to save: configureTraining first');
    return this.addVersion(this.trainer.adapter.clone());
  }

  /** Serve `version` to requests that start from now on; running requests finish on theirs. */
  publish(version: number): void {
    if (!this.versions.has(version)) throw new EngineError('bad_request', `weights version ${version} does not exist`);
    this.published = version;
    this.collectVersions();
  }

  /** Free versions older than the published one that no request uses (the base stays). */
  private collectVersions(): void {
    for (const [v, w] of this.versions) {
      if (v !== 0 && v < this.published && w.refs === 0) { w.adapter?.free(); this.versions.delete(v); }
    }
  }

  // ---- training ----

  configureTraining(lora: Partial<LoraConfig> = {}): void {
    this.trainer?.release();
    this.trainer = new LoraTrainer(this.model, lora);
  }

  private requireTrainer(): LoraTrainer {
    if (!this.trainer) throw new EngineError('bad_request', 'training is not configured: call configureTraining first');
    return this.trainer;
  }

  forwardBackwardSteps(data: Datum[], spec: LossSpec): Generator<void, ForwardBackwardMetrics> {
    return this.requireTrainer().forwardBackwardSteps(data, spec);
  }

  forwardBackward(data: Datum[], spec: LossSpec): ForwardBackwardMetrics { return this.requireTrainer().forwardBackward(data, spec); }

  optimStep(p: AdamParams): OptimStepMetrics { return this.requireTrainer().optimStep(p); }

  /** Write an adapter (default: the published version) as a PEFT folder. */
  saveAdapter(dir: string, sel: AdapterSelector = 'published'): void {
    const adapter = this.adapterFor(sel);
    if (!adapter) throw new EngineError('bad_request', 'the base model has no adapter to save');
    saveAdapter(dir, adapter, { baseModel: this.info.modelId, version: typeof sel === 'number' ? sel : sel === 'published' ? this.published : undefined });
  }

  /** Load a PEFT adapter folder as a new version (returned; publish it to serve it). */
  loadAdapter(dir: string): number {
    return this.addVersion(loadAdapter(dir, this.model.cfg, this.model.arena));
  }

  /** Checkpoint the trained adapter with its optimizer state. */
  saveTrainingState(dir: string): void {
    const tr = this.requireTrainer();
    saveTrainingState(dir, tr.adapter, tr.optimizer, { baseModel: this.info.modelId, version: this.latestVersion });
  }

  /** Resume training from a checkpoint; also adds its adapter as a new version (returned). */
  loadTrainingState(dir: string): number {
    const state = loadTrainingState(dir, this.model.cfg, this.model.arena);
    this.trainer?.release();
    this.trainer = new LoraTrainer(this.model, state.adapter.config, state.adapter);
    state.m.forEach((m, i) => this.trainer!.optimizer.m[i].set(m));
    state.v.forEach((v, i) => this.trainer!.optimizer.v[i].set(v));
    this.trainer.optimizer.step = state.step;
    // numbering continues from the checkpoint's version
    if (state.version !== null) this.latestVersion = Math.max(this.latestVersion, state.version - 1);
    return this.addVersion(state.adapter.clone());
  }

  async close(): Promise<void> { await this.model.close(); }
}
