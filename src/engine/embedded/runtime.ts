// The embedded engine inside one thread: model + tokenizer + a batch scheduler. Every step runs
// one forward pass over a chunk of the prompts being prefilled and the last token of every
// decoding sequence, so concurrent requests share each pass over the weights and no decode waits
// behind a long prompt: while anything decodes, the prefill chunk is sized (from measured step
// times) so a step costs about two decode-only steps. Prompts start from the prefix cache
// (prefix-cache.ts) and leave their caches there when they finish. KV memory is planned at
// admission: a request waits rather than run out of memory mid-stream, and the context length the
// engine reports is what fits beside the weights in the 4 GiB WebAssembly memory.
// The worker (engine/embedded/worker.ts) drives this; tests may use it directly.
import { basename } from 'node:path';
import { Transformer, type LoadOptions, type BatchItem } from './model.ts';
import { ChatTokenizer } from './tokenizer.ts';
import { kvCapacity, type KvCache } from './kv-cache.ts';
import { PrefixCache, type PrefixCacheStats } from './prefix-cache.ts';
import { sampleToken, topIndices } from './sampler.ts';
import { machineFor, allowedTokens, maskLogits, TokenTexts, type CharMachine } from './constraint.ts';
import { logSumExp } from './ops/logits.ts';
import { Rng, randomSeed } from './rng.ts';
import { IncrementalDecoder, StopMatcher } from './detokenize.ts';
import { scoreSteps, scoreStepsTopK, type CacheSource } from './score.ts';
import { LoraTrainer } from './trainer.ts';
import { FullTrainer } from './full-trainer.ts';
import { cloneWeights, freeWeights } from './full-weights.ts';
import { isFullTrainingState, saveFullTrainingState, loadFullTrainingState } from './full-state.ts';
import type { ModelWeights } from './weights.ts';
import type { LoraAdapter, LoraConfig } from './lora.ts';
import { saveAdapter, loadAdapter, saveTrainingState, loadTrainingState } from './peft.ts';
import { modelTensors, writeHfModel } from './hf-export.ts';
import type { LossSpec } from '../../learn/losses.ts';
import { EngineError, checkTokenIds, type EngineInfo, type SampleParams, type SampleResult, type SampledToken, type ScoreRequest, type ScoreOptions, type TopKScoreRequest, type TopKScore, type AdapterSelector, type Datum, type ForwardBackwardMetrics, type OptimStepMetrics, type AdamParams } from '../types.ts';

export interface Sequence {
  readonly key: number;
  /** the weights version this sequence is served by, from admission to the end */
  readonly version: number;
  readonly adapter: LoraAdapter | null;
  /** a full-parameter version's weights (undefined: the model's own) */
  readonly weights?: ModelWeights;
  readonly promptIds: number[];
  readonly params: SampleParams;
  /** null until admitted */
  cache: KvCache | null;
  /** KV bytes planned for this sequence at admission */
  plannedBytes: number;
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
  /** where the output stands in params.constraint */
  machine?: CharMachine;
}

export interface StepOutput { key: number; token: SampledToken | null; result: SampleResult | null }

/** Default largest number of prompt tokens fed in one step (bounds a step's latency and memory). */
export const PREFILL_CHUNK = 256;
/** Smallest prefill chunk while other sequences decode. */
const MIN_CHUNK = 4;
/** Default prefix-cache budget. */
export const PREFIX_CACHE_MIB = 1024;
/** Arena memory kept free beside the weights and the KV caches (workspace, logits, adapters). */
const HEADROOM_BYTES = 256 * 2 ** 20;
const WASM_MEMORY_BYTES = 4 * 2 ** 30;

export interface RuntimeOptions extends LoadOptions {
  modelId?: string;
  /** prefix-cache budget in MiB (0 turns the cache off); default 1024, at most what fits */
  prefixCacheMiB?: number;
  /** largest number of prompt tokens fed in one step; default 256 */
  prefillChunk?: number;
  /** cap on the memory for KV caches (live requests and the prefix cache) in MiB; default: what fits beside the weights */
  kvMemoryMiB?: number;
}

export interface RuntimeStats {
  prefixCache: PrefixCacheStats;
  /** memory for KV caches (live requests and the prefix cache) beside the weights */
  kvBudgetBytes: number;
  /** KV bytes planned by running requests and open scoring passes */
  liveKvBytes: number;
  contextLength: number;
  arenaUsedBytes: number;
  arenaReservedBytes: number;
  /** the prefill chunk the scheduler would use now, while sequences decode */
  prefillChunk: number;
}
/** A saved set of weights: version 0 is the base model (no adapter). */
interface WeightsVersion { adapter: LoraAdapter | null; weights?: ModelWeights; refs: number }

export class EmbeddedRuntime {
  readonly model: Transformer;
  readonly tokenizer: ChatTokenizer;
  readonly info: EngineInfo;
  /** the version new requests are served with */
  published = 0;
  trainer: LoraTrainer | null = null;
  /** full-parameter training (configureTraining(null)); at most one of trainer and fullTrainer is set */
  fullTrainer: FullTrainer | null = null;
  private readonly versions = new Map<number, WeightsVersion>([[0, { adapter: null, refs: 0 }]]);
  private latestVersion = 0;
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private nextKey = 1;
  readonly prefixCache: PrefixCache;
  /** the longest context that fits in memory (≤ the model's) */
  readonly contextLength: number;
  readonly kvBudgetBytes: number;
  private readonly bytesPerPosition: number;
  private readonly maxChunk: number;
  /** open scoring caches (their memory counts as live) */
  private readonly scoring = new Set<KvCache>();
  /** measured: ms of a decode-only step, and ms per prefilled row */
  private decodeMs = 0;
  private rowMs = 0;

  /** the model folder loaded (saveModel copies its tokenizer files) */
  readonly dir: string;

  constructor(dir: string, opts: RuntimeOptions = {}) {
    this.dir = dir;
    this.model = Transformer.load(dir, opts);
    this.tokenizer = ChatTokenizer.load(dir);
    const { cfg, weights, kernel } = this.model;
    this.maxChunk = Math.max(1, opts.prefillChunk ?? PREFILL_CHUNK);
    this.bytesPerPosition = cfg.numLayers * 2 * this.model.kvDim * 4;
    const { hiddenSize: H, intermediateSize: I } = cfg;
    const workspace = 2 ** Math.ceil(Math.log2(Math.max(this.maxChunk, 4))) * 4 * (3 * H + this.model.ldqkv + this.model.qDim + 3 * I);
    const fits = Math.max(0, WASM_MEMORY_BYTES - this.model.arena.usedBytes - workspace - HEADROOM_BYTES);
    this.kvBudgetBytes = Math.min(fits, (opts.kvMemoryMiB ?? Infinity) * 2 ** 20);
    this.contextLength = Math.max(2, Math.min(this.model.maxContext, Math.floor(this.kvBudgetBytes / this.bytesPerPosition)));
    const cacheBytes = Math.min(this.kvBudgetBytes, (opts.prefixCacheMiB ?? PREFIX_CACHE_MIB) * 2 ** 20);
    this.prefixCache = new PrefixCache(cacheBytes, () => this.model.newCache(this.contextLength), (c) => c.bytes);
    this.info = {
      modelId: opts.modelId ?? basename(dir.replace(/\/+$/, '')),
      modelType: cfg.modelType,
      contextLength: this.contextLength,
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
    if (promptIds.length >= this.contextLength) {
      const why = this.contextLength < this.model.maxContext ? ` (the model's is ${this.model.maxContext}, but KV caches of only ${this.contextLength} positions fit beside its weights in the 4 GiB WebAssembly memory)` : '';
      throw new EngineError('context_length_exceeded', `the prompt has ${promptIds.length} tokens; this engine's context is ${this.contextLength} tokens${why}, and at least one must remain for the answer`);
    }
    const key = this.nextKey++;
    const version = params.weights === 'base' ? 0 : typeof params.weights === 'number' ? params.weights : this.published;
    const pinned = this.versions.get(version);
    if (!pinned) throw new EngineError('bad_request', `weights version ${version} does not exist (or was freed: only published, newer and in-use versions are kept)`);
    pinned.refs++;
    const stopIds = new Set<number>(params.stopTokenIds ?? []);
    if (!params.ignoreEos) for (const id of this.model.cfg.eosTokenIds) stopIds.add(id);
    this.waiting.push({
      key, version, adapter: pinned.adapter, weights: pinned.weights, promptIds, params, cache: null, plannedBytes: 0, ids: [], logprobs: [],
      rng: new Rng(params.seed ?? randomSeed()), decoder: new IncrementalDecoder(this.tokenizer, promptIds),
      stops: new StopMatcher(params.stop ?? []), stopIds, prefilled: false, aborted: false, tail: '', result: null,
    });
    return key;
  }

  abort(key: number): void {
    for (const s of [...this.waiting, ...this.running]) if (s.key === key) s.aborted = true;
  }

  /** KV bytes a sequence may grow to: its prompt plus its answer, within the context. */
  private plannedBytes(s: Sequence): number {
    const positions = Math.min(this.contextLength, s.promptIds.length + s.params.maxTokens);
    return kvCapacity(positions, this.contextLength) * this.bytesPerPosition;
  }

  /** KV bytes held or planned by running sequences and open scoring passes. */
  private get liveKvBytes(): number {
    let b = 0;
    for (const s of this.running) b += s.plannedBytes;
    for (const c of this.scoring) b += c.bytes;
    return b;
  }

  /** Room for `bytes` more KV, evicting prefix-cache entries if needed. */
  private makeRoom(bytes: number): boolean {
    const free = this.kvBudgetBytes - this.liveKvBytes - bytes;
    if (free < 0) return false;
    if (this.prefixCache.usedBytes > free) this.prefixCache.shrinkTo(free);
    return true;
  }

  /** Prompt rows to feed in this step: all of a chunk when nothing decodes, else about one decode step's worth of time. */
  prefillChunkNow(decoding: boolean): number {
    if (!decoding) return this.maxChunk;
    if (this.decodeMs === 0 || this.rowMs === 0) return Math.min(this.maxChunk, 32);
    return Math.max(MIN_CHUNK, Math.min(this.maxChunk, Math.floor(this.decodeMs / this.rowMs)));
  }

  /** One forward pass: admits waiting prompts, feeds a chunk of the prompts being prefilled and decodes one token for every running sequence. */
  step(): StepOutput[] {
    const out: StepOutput[] = [];
    // retire aborted sequences first
    for (const list of [this.waiting, this.running]) {
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].aborted) { out.push({ key: list[i].key, token: null, result: this.finish(list[i], 'abort') }); list.splice(i, 1); }
      }
    }
    // normal requests first (in arrival order); a low-priority one only when none waits, one at a
    // time; each only when its KV fits (or nothing else runs)
    const lowRunning = this.running.some((s) => s.params.priority === 'low');
    for (let i = 0; i < this.waiting.length;) {
      const s = this.waiting[i];
      const low = s.params.priority === 'low';
      if (low && (lowRunning || this.waiting.some((w) => w.params.priority !== 'low'))) { i++; continue; }
      const planned = this.plannedBytes(s);
      if (!this.makeRoom(planned) && this.running.length > 0) break;
      this.waiting.splice(i, 1);
      const hit = this.prefixCache.enabled ? this.prefixCache.take(s.version, s.promptIds, s.promptIds.length - 1) : null;
      s.cache = hit?.cache ?? this.model.newCache(this.contextLength);
      s.plannedBytes = Math.max(planned, s.cache.bytes);
      this.running.push(s);
      if (low) break;
    }
    if (this.running.length === 0) return out;

    // decode rows for every prefilled sequence, then prompt chunks in arrival order
    let decoders = 0;
    for (const s of this.running) if (s.prefilled) decoders++;
    let budget = this.prefillChunkNow(decoders > 0);
    const items: BatchItem[] = [];
    const fed: Sequence[] = [];
    const sampled: boolean[] = [];
    let prefillRows = 0;
    for (const s of this.running) {
      const cache = s.cache!;
      if (s.prefilled) { items.push({ tokens: [s.ids[s.ids.length - 1]], cache, adapter: s.adapter, weights: s.weights }); fed.push(s); sampled.push(true); continue; }
      if (budget === 0) continue;
      const from = cache.length, to = Math.min(s.promptIds.length, from + budget);
      items.push({ tokens: s.promptIds.slice(from, to), cache, adapter: s.adapter, weights: s.weights });
      fed.push(s); sampled.push(to === s.promptIds.length);
      budget -= to - from; prefillRows += to - from;
    }
    const t0 = performance.now();
    const hidden = this.model.forward(items);
    const { hiddenSize: H, vocabSize: V } = this.model.cfg;
    const n = sampled.filter(Boolean).length;
    const last = this.model.arena.alloc(Math.max(1, n) * H);
    let row = 0, k = 0;
    items.forEach((it, i) => { row += it.tokens.length; if (sampled[i]) last.set(hidden.subarray((row - 1) * H, row * H), k++ * H); });
    const logits = this.model.arena.alloc(Math.max(1, n) * V);
    if (n > 0) this.model.logits(logits, last, n, fed.filter((_, j) => sampled[j]).map((s) => s.weights));
    this.observe(performance.now() - t0, decoders, prefillRows);

    k = 0;
    for (let j = 0; j < fed.length; j++) {
      if (!sampled[j]) continue;
      const i = k++;
      const s = fed[j];
      s.prefilled = true;
      if (s.params.constraint) this.constrain(s, logits, i * V, V);
      const c = sampleToken(logits, i * V, V, s.params, () => s.rng.next());
      if (s.machine && !s.stopIds.has(c.id)) for (const ch of this.tokenTexts().texts[c.id]) s.machine.push(ch);
      s.ids.push(c.id);
      s.logprobs.push(c.logprob);
      const isStopId = s.stopIds.has(c.id);
      let text = isStopId ? '' : s.stops.push(s.decoder.push(c.id));
      if (isStopId) s.result = this.finish(s, 'stop', c.id);
      else if (s.stops.matched !== null) s.result = this.finish(s, 'stop', s.stops.matched);
      else if (s.machine?.done && s.stopIds.size === 0) s.result = this.finish(s, 'stop');
      else if (s.ids.length >= s.params.maxTokens || s.cache!.length + 1 > this.contextLength) s.result = this.finish(s, 'length');
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

  private texts: TokenTexts | null = null;

  /** The text each token id adds after other text (decoded behind an anchor, so leading spaces survive). */
  tokenTexts(): TokenTexts {
    if (this.texts) return this.texts;
    const V = this.model.cfg.vocabSize;
    const anchor = this.tokenizer.encode('a', false).slice(-1);
    const base = this.tokenizer.decode(anchor, false);
    const texts: string[] = new Array(V);
    for (let id = 0; id < V; id++) {
      let t = '';
      try { t = this.tokenizer.decode([...anchor, id], false).slice(base.length); } catch { /* not in the tokenizer: never allowed */ }
      texts[id] = t.includes('\uFFFD') ? '' : t;
    }
    return (this.texts = new TokenTexts(texts));
  }

  /** Masks the logits of tokens that would leave the sequence's constraint (engine/embedded/constraint.ts). */
  private constrain(s: Sequence, logits: Float32Array, off: number, V: number): void {
    const c = s.params.constraint!;
    s.machine ??= machineFor(c);
    const budget = Math.min(s.params.maxTokens - s.ids.length, this.contextLength - s.cache!.length);
    const allowed = allowedTokens(s.machine, this.tokenTexts(), s.stopIds, budget, c.type === 'tool_call');
    if (allowed.length > 0) maskLogits(logits, off, V, allowed);
  }

  /** Learn the cost of a decode step and of a prefilled row (moving averages) for sizing chunks. */
  private observe(ms: number, decoders: number, prefillRows: number): void {
    const ema = (old: number, x: number) => (old === 0 ? x : 0.7 * old + 0.3 * x);
    if (prefillRows === 0) { if (decoders > 0) this.decodeMs = ema(this.decodeMs, ms); return; }
    const rowMs = Math.max(0, ms - (decoders > 0 ? this.decodeMs : 0)) / prefillRows;
    if (rowMs > 0) this.rowMs = ema(this.rowMs, rowMs);
  }

  private finish(s: Sequence, reason: SampleResult['finishReason'], stoppedBy?: number | string): SampleResult {
    if (reason !== 'abort' && s.stops.matched === null) {
      // release what an incomplete character or a possible stop-string prefix held back
      s.tail = s.stops.push(s.decoder.flush());
      if (s.stops.matched === null) s.tail += s.stops.flush();
      else stoppedBy = s.stops.matched;
    }
    if (s.cache) {
      // what was computed stays for the next request that shares the prefix
      if (this.prefixCache.enabled) this.prefixCache.insert(s.version, [...s.promptIds, ...s.ids], s.cache);
      else s.cache.release();
      s.cache = null;
    }
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
    const steps = this.scoreSteps(requests, opts);
    for (;;) { const r = steps.next(); if (r.done) return r.value; }
  }

  /** `score` in passes of at most one prefill chunk, yielding between them (the worker decodes in between). */
  scoreSteps(requests: ScoreRequest[], opts: ScoreOptions = {}): Generator<void, Float32Array[]> {
    const { adapter, weights, caches } = this.scoringSetup(requests, opts);
    return scoreSteps(this.model, requests, adapter, opts.temperature ?? 1, () => this.prefillChunkNow(this.running.length > 0), caches, weights);
  }

  /** `scoreSteps` with each position's top-K and the log-probs of the requests' gatherIds (see Engine.scoreTopK). */
  scoreTopKSteps(requests: TopKScoreRequest[], k: number, opts: ScoreOptions = {}): Generator<void, TopKScore[]> {
    const V = this.model.cfg.vocabSize;
    if (!Number.isInteger(k) || k < 0 || k > V) throw new EngineError('bad_request', `top-K scoring needs an integer k in 0..${V}, got ${k}`);
    for (const r of requests) {
      if (!r.gatherIds) continue;
      if (r.gatherIds.length !== r.responseIds.length) throw new EngineError('bad_request', `gatherIds has ${r.gatherIds.length} entries for ${r.responseIds.length} response tokens`);
      for (const ids of r.gatherIds) checkTokenIds(ids, V, 'gather id');
    }
    const { adapter, weights, caches } = this.scoringSetup(requests, opts);
    return scoreStepsTopK(this.model, requests, adapter, opts.temperature ?? 1, () => this.prefillChunkNow(this.running.length > 0), k, caches, weights);
  }

  /** Checks the requests and picks the weights and the KV caches (prefix cache for fixed versions) of a scoring job. */
  private scoringSetup(requests: ScoreRequest[], opts: ScoreOptions): { adapter: LoraAdapter | null; weights?: ModelWeights; caches: CacheSource } {
    const V = this.model.cfg.vocabSize;
    for (const { promptIds, responseIds } of requests) {
      if (promptIds.length === 0) throw new EngineError('bad_request', 'scoring needs at least one prompt token');
      const total = promptIds.length + responseIds.length;
      if (total - 1 > this.contextLength) throw new EngineError('context_length_exceeded', `prompt + response is ${total} tokens; this engine's context is ${this.contextLength}`);
      checkTokenIds(promptIds, V);
      checkTokenIds(responseIds, V);
    }
    const sel = opts.adapter ?? 'published';
    const { adapter, weights } = this.versionFor(sel);
    // the weights being trained change every step: their KV is never cached
    const version = sel === 'current' ? null : sel === 'base' ? 0 : sel === 'published' ? this.published : sel;
    const caches: CacheSource = {
      open: (tokens, limit) => {
        const hit = version !== null && this.prefixCache.enabled ? this.prefixCache.take(version, tokens, limit) : null;
        const c = hit?.cache ?? this.model.newCache(this.contextLength);
        this.scoring.add(c);
        return c;
      },
      close: (tokens, c) => {
        this.scoring.delete(c);
        if (version !== null && this.prefixCache.enabled && this.versions.has(version)) this.prefixCache.insert(version, tokens, c);
        else c.release();
      },
    };
    return { adapter, weights, caches };
  }

  // ---- weights versions ----

  /** The adapter (LoRA versions) and full weights (full-parameter versions) a selector names. */
  versionFor(sel: AdapterSelector): { adapter: LoraAdapter | null; weights?: ModelWeights } {
    if (sel === 'base') return { adapter: null };
    if (sel === 'current') {
      if (this.fullTrainer) return { adapter: null, weights: this.fullTrainer.weights };
      if (!this.trainer) throw new EngineError('bad_request', "nothing is being trained: 'current' needs configureTraining first");
      return { adapter: this.trainer.adapter };
    }
    const v = sel === 'published' ? this.published : sel;
    const found = this.versions.get(v);
    if (!found) throw new EngineError('bad_request', `weights version ${v} does not exist (or was freed: only published, newer and in-use versions are kept)`);
    return found;
  }

  adapterFor(sel: AdapterSelector): LoraAdapter | null { return this.versionFor(sel).adapter; }

  stats(): RuntimeStats {
    return {
      prefixCache: this.prefixCache.stats(), kvBudgetBytes: this.kvBudgetBytes, liveKvBytes: this.liveKvBytes, contextLength: this.contextLength,
      arenaUsedBytes: this.model.arena.usedBytes, arenaReservedBytes: this.model.arena.reservedBytes, prefillChunk: this.prefillChunkNow(true),
    };
  }

  /** Forget every cached prefix: for whoever changes the weights of an existing version in place. */
  clearPrefixCache(): void { this.prefixCache.clear(); }

  /** Versions whose adapter memory is held (for tests and /metrics). */
  get liveVersions(): number[] { return [...this.versions.keys()].sort((a, b) => a - b); }

  /** Add an adapter (or full weights) as a new version (not yet published), numbered above every earlier one and ≥ atLeast. */
  private addVersion(adapter: LoraAdapter | null, atLeast = 0, weights?: ModelWeights): number {
    const v = this.latestVersion = Math.max(this.latestVersion + 1, atLeast);
    this.versions.set(v, { adapter, weights, refs: 0 });
    return v;
  }

  /** Snapshot the trained adapter as version v+1; requests keep using the published one until publish(v+1). */
  saveWeights(opts: { atLeast?: number } = {}): number {
    const atLeast = opts.atLeast ?? 0;
    if (!Number.isSafeInteger(atLeast) || atLeast < 0) throw new EngineError('bad_request', `atLeast must be a non-negative integer (got ${atLeast})`);
    if (this.fullTrainer) return this.addVersion(null, atLeast, cloneWeights(this.fullTrainer.weights, this.model.arena));
    if (!this.trainer) throw new EngineError('bad_request', 'nothing to save: configureTraining first');
    return this.addVersion(this.trainer.adapter.clone(), atLeast);
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
      if (v !== 0 && v < this.published && w.refs === 0) {
        w.adapter?.free();
        if (w.weights) freeWeights(w.weights, this.model.arena);
        this.versions.delete(v); this.prefixCache.dropVersion(v);
      }
    }
  }

  // ---- training ----

  /** A fresh LoRA adapter, or with `null` full-parameter training from the base weights. */
  configureTraining(lora: Partial<LoraConfig> | null = {}): void {
    this.releaseTrainers();
    if (lora === null) this.fullTrainer = new FullTrainer(this.model);
    else this.trainer = new LoraTrainer(this.model, lora);
  }

  private releaseTrainers(): void {
    this.trainer?.release(); this.trainer = null;
    this.fullTrainer?.release(); this.fullTrainer = null;
  }

  private requireTrainer(): LoraTrainer | FullTrainer {
    const tr = this.trainer ?? this.fullTrainer;
    if (!tr) throw new EngineError('bad_request', 'training is not configured: call configureTraining first');
    return tr;
  }

  /** The optimizer step of whatever is being trained (null when nothing is). */
  get optimizerStep(): number | null { return (this.trainer ?? this.fullTrainer)?.optimizer.step ?? null; }

  forwardBackwardSteps(data: Datum[], spec: LossSpec): Generator<void, ForwardBackwardMetrics> {
    return this.requireTrainer().forwardBackwardSteps(data, spec);
  }

  forwardBackward(data: Datum[], spec: LossSpec): ForwardBackwardMetrics { return this.requireTrainer().forwardBackward(data, spec); }

  optimStep(p: AdamParams): OptimStepMetrics { return this.requireTrainer().optimStep(p); }

  /** Write an adapter (default: the published version) as a PEFT folder. */
  saveAdapter(dir: string, sel: AdapterSelector = 'published'): void {
    const { adapter, weights } = this.versionFor(sel);
    if (weights) throw new EngineError('bad_request', 'these weights come from full-parameter training and have no adapter: write them with saveModel');
    if (!adapter) throw new EngineError('bad_request', 'the base model has no adapter to save');
    saveAdapter(dir, adapter, { baseModel: this.info.modelId, version: typeof sel === 'number' ? sel : sel === 'published' ? this.published : undefined });
  }

  /** Write the selected weights as a Hugging Face model folder (LoRA merged in). */
  saveModel(dir: string, sel: AdapterSelector = 'published'): void {
    const { adapter, weights } = this.versionFor(sel);
    writeHfModel(dir, this.dir, modelTensors(this.model.cfg, weights ?? this.model.weights, adapter));
  }

  /** Load a PEFT adapter folder as a new version (returned; publish it to serve it). */
  loadAdapter(dir: string): number {
    return this.addVersion(loadAdapter(dir, this.model.cfg, this.model.arena));
  }

  /** Checkpoint the trained adapter with its optimizer state. */
  saveTrainingState(dir: string): void {
    if (this.fullTrainer) { saveFullTrainingState(dir, this.dir, this.model.cfg, this.fullTrainer, this.latestVersion); return; }
    const tr = this.requireTrainer() as LoraTrainer;
    saveTrainingState(dir, tr.adapter, tr.optimizer, { baseModel: this.info.modelId, version: this.latestVersion });
  }

  /** Resume training from a checkpoint; also adds its adapter as a new version (returned). */
  loadTrainingState(dir: string): number {
    if (isFullTrainingState(dir)) {
      const full = loadFullTrainingState(dir, this.model.cfg, this.model.arena);
      this.releaseTrainers();
      const tr = this.fullTrainer = new FullTrainer(this.model, full.weights);
      full.optimizer.m.forEach((m, i) => tr.optimizer.m[i].set(m));
      full.optimizer.v.forEach((v, i) => tr.optimizer.v[i].set(v));
      tr.optimizer.step = full.optimizer.step;
      if (full.version !== null) this.latestVersion = Math.max(this.latestVersion, full.version - 1);
      return this.addVersion(null, 0, cloneWeights(tr.weights, this.model.arena));
    }
    const state = loadTrainingState(dir, this.model.cfg, this.model.arena);
    this.releaseTrainers();
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
