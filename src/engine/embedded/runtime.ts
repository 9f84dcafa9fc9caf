// The embedded engine inside one thread: model + tokenizer + a batch scheduler. Every step runs
// one forward pass over the last token of every decoding sequence and, paced by prefill-pacer.ts,
// rows of the prompts being prefilled: decoders keep a set share of their idle speed however long
// the prompt, and with nothing decoding prompts go in full chunks. Prompts start from the prefix
// cache (prefix-cache.ts) and leave their caches there when they finish. KV memory is planned at
// admission (kv-memory.ts): a request waits rather than run out of memory mid-stream. Sequences
// (sequence.ts) pin their weights version (versions.ts) until they end. Training and checkpoints
// go to the LoRA or full-parameter trainer (training-slot.ts).
// The worker (engine/embedded/worker.ts) drives this; tests may use it directly.
import { basename } from 'node:path';
import { Transformer, type LoadOptions, type BatchItem } from './model.ts';
import { ChatTokenizer } from './tokenizer.ts';
import type { KvCache } from './kv-cache.ts';
import { PrefixCache, type PrefixCacheStats } from './prefix-cache.ts';
import type { TokenTexts } from './constraint.ts';
import { scoreSteps, scoreStepsTopK, type CacheSource } from './score.ts';
import type { LoraTrainer } from './trainer.ts';
import type { FullTrainer } from './full-trainer.ts';
import { freeWeights } from './full-weights.ts';
import type { ModelWeights } from './weights.ts';
import type { LoraAdapter, LoraConfig } from './lora.ts';
import { saveAdapter, loadAdapter } from './peft.ts';
import { TrainingSlot } from './training-slot.ts';
import { modelTensors, writeHfModel } from './hf-export.ts';
import { BackgroundStep, PrefillPacer, type PacerState } from './prefill-pacer.ts';
import { WeightsVersions } from './versions.ts';
import { planKvMemory, planPagedKvMemory, plannedKvBytes, contextProblem, type KvPlan } from './kv-memory.ts';
import { KvPagePool, PagedKvCache } from './kv-pages.ts';
import { newSequence, sampleNext, closeText, tokenTextsOf, type Sequence, type SampleContext } from './sequence.ts';
import type { LossSpec } from '../../learn/losses.ts';
import { EngineError, checkTokenIds, type EngineInfo, type SampleParams, type SampleResult, type SampledToken, type ScoreRequest, type ScoreOptions, type TopKScoreRequest, type TopKScore, type AdapterSelector, type Datum, type ForwardBackwardMetrics, type OptimStepMetrics, type AdamParams } from '../types.ts';

export type { Sequence } from './sequence.ts';

export interface StepOutput { key: number; token: SampledToken | null; result: SampleResult | null }

/** Default largest number of prompt tokens fed in one step (bounds a step's latency and memory). */
export const PREFILL_CHUNK = 256;
/** Default share of idle decode speed kept while other requests' prompts are fed. */
export const DECODE_SHARE = 0.6;
/** Default prefix-cache budget. */
export const PREFIX_CACHE_MIB = 1024;
/**
 * A background step (a scoring pass run through the worker, or a low-priority prompt's share of a
 * step) takes the rows that fit in BACKGROUND_STEP_MS by its learnt cost per row, at most
 * BACKGROUND_ROWS: a user request that arrives meanwhile waits for at most one such step, not for a
 * 256-row chunk. For Qwen3-0.6B at 10K positions on 2 cores (~30 ms
 * a row) that is ~16 rows; a small model takes the full 32 (docs/benchmarks.md, issue 16 session 11).
 */
export const BACKGROUND_STEP_MS = 500;
export const BACKGROUND_ROWS = 32;
/**
 * Positions the default prefix-cache budget of paged caches holds at least: three OpenClaw-sized
 * prompts (~10K tokens each). At Qwen3-0.6B's 112 KiB per position, 1,024 MiB held fewer positions
 * than one such prompt, so nothing was ever cached (an entry larger than the budget is dropped).
 */
export const PREFIX_CACHE_MIN_POSITIONS = 32768;

/** The prefix-cache budget when none is asked for: PREFIX_CACHE_MIB, or more for paged caches whose positions are large. */
export function defaultPrefixCacheBytes(pagedBytesPerPosition: number | null): number {
  const mib = PREFIX_CACHE_MIB * 2 ** 20;
  return pagedBytesPerPosition === null ? mib : Math.max(mib, PREFIX_CACHE_MIN_POSITIONS * pagedBytesPerPosition);
}

export interface RuntimeOptions extends LoadOptions {
  modelId?: string;
  /** prefix-cache budget in MiB (0 turns the cache off); default 1024 (paged caches: at least 32K positions), at most what fits */
  prefixCacheMiB?: number;
  /** largest number of prompt tokens fed in one step; default 256 */
  prefillChunk?: number;
  /** share of idle decode speed kept while prompts are fed beside decoding sequences; default 0.6 */
  decodeShare?: number;
  /** cap on the memory for KV caches (live requests and the prefix cache) in MiB; default: what fits beside the weights (f32), or the model's context plus the prefix cache (bf16) */
  kvMemoryMiB?: number;
  /**
   * KV caches for serving: 'f32' in the WebAssembly memory beside the weights, 'bf16' in pages
   * outside it (kv-pages.ts; needs a kernel that reads them: native or ts); 'auto' (default):
   * bf16 where the kernel reads it and f32 would not hold the model's full context.
   */
  kvDtype?: KvDtype | 'auto';
}

export type KvDtype = 'f32' | 'bf16';

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
  /** what the pacer has learnt: a decode step's cost, a prompt row's, and the credit left */
  pacer: PacerState;
  /** how serving KV caches are stored */
  kvDtype: KvDtype;
  /** bytes of KV pages made so far, in use or free (bf16 caches; 0 for f32 caches, which live in the arena) */
  kvReservedBytes: number;
}

export class EmbeddedRuntime {
  readonly model: Transformer;
  readonly tokenizer: ChatTokenizer;
  readonly info: EngineInfo;
  private readonly training: TrainingSlot;
  private readonly versions: WeightsVersions;
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private nextKey = 1;
  readonly prefixCache: PrefixCache;
  private readonly kv: KvPlan;
  /** pages of the bf16 caches (null: f32 caches in the arena) */
  private readonly pages: KvPagePool | null;
  /** open scoring caches (their memory counts as live) */
  private readonly scoring = new Set<KvCache>();
  private readonly pacer: PrefillPacer;
  private readonly background = new BackgroundStep(BACKGROUND_STEP_MS, BACKGROUND_ROWS);
  /** rows the background scoring step in progress was given (0: none), to learn its cost per row */
  private backgroundRows = 0;
  private readonly sampling: SampleContext;

  /** the model folder loaded (saveModel copies its tokenizer files) */
  readonly dir: string;

  constructor(dir: string, opts: RuntimeOptions = {}) {
    this.dir = dir;
    this.model = Transformer.load(dir, opts);
    this.tokenizer = ChatTokenizer.load(dir);
    this.training = new TrainingSlot(this.model);
    const { cfg, weights, kernel } = this.model;
    const maxChunk = Math.max(1, opts.prefillChunk ?? PREFILL_CHUNK);
    this.pacer = new PrefillPacer({ maxChunk, decodeShare: opts.decodeShare ?? DECODE_SHARE });
    const { hiddenSize: H, intermediateSize: I } = cfg;
    const arenaInput = {
      usedBytes: this.model.arena.usedBytes, bytesPerPosition: cfg.numLayers * 2 * this.model.kvDim * 4, modelContext: this.model.maxContext,
      workspaceBytes: 2 ** Math.ceil(Math.log2(Math.max(maxChunk, 4))) * 4 * (3 * H + this.model.ldqkv + this.model.qDim + 3 * I),
    };
    const arenaPlan = planKvMemory({ ...arenaInput, capMiB: opts.kvMemoryMiB });
    // whether float32 KV for the model's whole context fits beside the weights at all (whatever the cap)
    const arenaHoldsContext = planKvMemory(arenaInput).contextLength >= this.model.maxContext;
    const dtype = opts.kvDtype ?? 'auto', readsPages = typeof kernel.attentionPaged === 'function';
    if (dtype === 'bf16' && !readsPages) throw new Error(`bf16 KV caches need a kernel that reads them (native or ts); the ${kernel.name} kernel reads float32 caches in the WebAssembly memory only`);
    const paged = dtype === 'bf16' || (dtype === 'auto' && readsPages && !arenaHoldsContext);
    if (paged) this.pages = new KvPagePool(cfg.numLayers, cfg.numKvHeads, cfg.headDim, kernel.addressOf ? (v) => kernel.addressOf!(v) : null);
    else this.pages = null;
    const wantCacheBytes = opts.prefixCacheMiB !== undefined ? opts.prefixCacheMiB * 2 ** 20 : defaultPrefixCacheBytes(this.pages?.bytesPerPosition ?? null);
    if (this.pages) {
      this.kv = planPagedKvMemory({ bytesPerPosition: this.pages.bytesPerPosition, pagePositions: this.pages.positions, modelContext: this.model.maxContext, prefixCacheBytes: wantCacheBytes, capMiB: opts.kvMemoryMiB });
    } else {
      this.kv = arenaPlan;
    }
    const cacheBytes = Math.min(this.kv.budgetBytes, wantCacheBytes);
    this.prefixCache = new PrefixCache(cacheBytes, () => this.newKvCache(), (c) => c.bytes);
    this.versions = new WeightsVersions((v, w) => {
      w.adapter?.free();
      if (w.weights) freeWeights(w.weights, this.model.arena);
      this.prefixCache.dropVersion(v);
    });
    this.sampling = { texts: () => this.tokenTexts(), contextLength: this.contextLength, finish: (s, reason, by) => this.finish(s, reason, by) };
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

  /** An empty serving cache (paged bf16 or f32 in the arena, as chosen at load). */
  private newKvCache(): KvCache {
    return this.pages ? new PagedKvCache(this.pages, this.contextLength) : this.model.newCache(this.contextLength);
  }

  /** the longest context that fits in memory (≤ the model's) */
  get contextLength(): number { return this.kv.contextLength; }
  get kvBudgetBytes(): number { return this.kv.budgetBytes; }
  /** the version new requests are served with */
  get published(): number { return this.versions.published; }

  get busy(): boolean { return this.waiting.length + this.running.length > 0; }

  /** Queue a generation; returns its key. Throws EngineError for prompts the model cannot take. */
  add(promptIds: number[], params: SampleParams): number {
    if (promptIds.length === 0) throw new EngineError('bad_request', 'the prompt has no tokens');
    checkTokenIds(promptIds, this.model.cfg.vocabSize, 'prompt token id');
    const problem = contextProblem(this.kv, this.model.maxContext, promptIds.length);
    if (problem) throw new EngineError('context_length_exceeded', problem);
    const version = params.weights === 'base' ? 0 : typeof params.weights === 'number' ? params.weights : this.published;
    const pinned = this.versions.pin(version);
    const key = this.nextKey++;
    this.waiting.push(newSequence(key, version, pinned, promptIds, params, this.tokenizer, this.model.cfg.eosTokenIds));
    return key;
  }

  abort(key: number): void {
    for (const s of [...this.waiting, ...this.running]) if (s.key === key) s.aborted = true;
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
    const free = this.kv.budgetBytes - this.liveKvBytes - bytes;
    if (free < 0) return false;
    if (this.prefixCache.usedBytes > free) this.prefixCache.shrinkTo(free);
    return true;
  }

  /** Admit waiting prompts: normal ones in arrival order, a low-priority one only when none waits (one at a time); each only when its KV fits (or nothing else runs). */
  private admit(): void {
    const lowRunning = this.running.some((s) => s.params.priority === 'low');
    for (let i = 0; i < this.waiting.length;) {
      const s = this.waiting[i];
      const low = s.params.priority === 'low';
      if (low && (lowRunning || this.waiting.some((w) => w.params.priority !== 'low'))) { i++; continue; }
      const planned = plannedKvBytes(this.kv, s.promptIds.length, s.params.maxTokens);
      if (!this.makeRoom(planned) && this.running.length > 0) break;
      this.waiting.splice(i, 1);
      const hit = this.prefixCache.enabled ? this.prefixCache.take(s.version, s.promptIds, s.promptIds.length - 1) : null;
      s.cache = hit?.cache ?? this.newKvCache();
      s.plannedBytes = Math.max(planned, s.cache.bytes);
      this.running.push(s);
      if (low) break;
    }
  }

  /** One forward pass: admits waiting prompts, decodes one token for every running sequence and feeds the prompt rows the pacer allows. */
  step(): StepOutput[] {
    const out: StepOutput[] = [];
    // retire aborted sequences first
    for (const list of [this.waiting, this.running]) {
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].aborted) { out.push({ key: list[i].key, token: null, result: this.finish(list[i], 'abort') }); list.splice(i, 1); }
      }
    }
    this.admit();
    if (this.running.length === 0) return out;

    // decode rows for every prefilled sequence, then prompt chunks: normal priority first, each in
    // arrival order. Only normal-priority decoders are protected by the pacer: a low-priority one
    // (the judge) never holds back a user's prompt.
    let decoders = 0;
    for (const s of this.running) if (s.prefilled && s.params.priority !== 'low') decoders++;
    let budget = this.pacer.rows(decoders > 0);
    const items: BatchItem[] = [];
    const fed: Sequence[] = [];
    const sampled: boolean[] = [];
    let prefillRows = 0;
    // a low-priority prompt (the judge's) gets rows only in steps where no user prompt is being fed
    const userPrompt = this.running.some((s) => !s.prefilled && s.params.priority !== 'low');
    const order = [...this.running.filter((s) => s.prefilled || s.params.priority !== 'low'), ...this.running.filter((s) => !s.prefilled && s.params.priority === 'low')];
    for (const s of order) {
      const cache = s.cache!;
      if (s.prefilled) { items.push({ tokens: [s.ids[s.ids.length - 1]], cache, adapter: s.adapter, weights: s.weights }); fed.push(s); sampled.push(true); continue; }
      if (budget === 0 || (userPrompt && s.params.priority === 'low')) continue;
      const from = cache.length, to = Math.min(s.promptIds.length, from + (s.params.priority === 'low' ? Math.min(budget, this.background.rows()) : budget));
      items.push({ tokens: s.promptIds.slice(from, to), cache, adapter: s.adapter, weights: s.weights });
      fed.push(s); sampled.push(to === s.promptIds.length);
      budget -= to - from; prefillRows += to - from;
    }
    if (items.length === 0) return out;
    const t0 = performance.now();
    const hidden = this.model.forward(items);
    const { hiddenSize: H, vocabSize: V } = this.model.cfg;
    const n = sampled.filter(Boolean).length;
    const last = this.model.arena.alloc(Math.max(1, n) * H);
    const logits = this.model.arena.alloc(Math.max(1, n) * V);
    try {
      let row = 0, k = 0;
      items.forEach((it, i) => { row += it.tokens.length; if (sampled[i]) last.set(hidden.subarray((row - 1) * H, row * H), k++ * H); });
      if (n > 0) this.model.logits(logits, last, n, fed.filter((_, j) => sampled[j]).map((s) => s.weights));
      this.pacer.step(performance.now() - t0, decoders, prefillRows);
      k = 0;
      for (let j = 0; j < fed.length; j++) {
        if (!sampled[j]) continue;
        const s = fed[j];
        out.push({ key: s.key, token: sampleNext(s, logits, k++ * V, V, this.sampling), result: null });
      }
    } finally {
      this.model.arena.free(last);
      this.model.arena.free(logits);
    }
    for (let i = this.running.length - 1; i >= 0; i--) {
      const s = this.running[i];
      if (s.result) { out.push({ key: s.key, token: null, result: s.result }); this.running.splice(i, 1); }
    }
    return out;
  }

  private texts: TokenTexts | null = null;

  /** The text each token id adds after other text (constrained decoding), built once. */
  tokenTexts(): TokenTexts { return (this.texts ??= tokenTextsOf(this.tokenizer, this.model.cfg.vocabSize)); }

  private finish(s: Sequence, reason: SampleResult['finishReason'], stoppedBy?: number | string): SampleResult {
    stoppedBy = closeText(s, reason, stoppedBy);
    if (s.cache) {
      // what was computed stays for the next request that shares the prefix
      if (this.prefixCache.enabled) this.prefixCache.insert(s.version, [...s.promptIds, ...s.ids], s.cache);
      else s.cache.release();
      s.cache = null;
    }
    this.versions.unpin(s.version);
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
    // on this thread nothing decodes between passes: full chunks, nothing to pay
    const steps = this.scoreSteps(requests, opts, false);
    for (;;) { const r = steps.next(); if (r.done) return r.value; }
  }

  /**
   * `score` in passes, yielding between them (the worker decodes in between). While user-facing
   * (normal-priority) requests are in the engine, a pass takes only the rows the pacer's credit
   * allows (none while they only prefill: the credit is earned by decode steps, and prompt rows
   * spend it first) and its time is paid from that credit, so background scoring delays neither a
   * first token nor keeps decoders below their share.
   */
  scoreSteps(requests: ScoreRequest[], opts: ScoreOptions = {}, paced = true): Generator<void, Float32Array[]> {
    const { adapter, weights, caches } = this.scoringSetup(requests, opts);
    return this.paced(scoreSteps(this.model, requests, adapter, opts.temperature ?? 1, () => this.scoringRows(paced), caches, weights), paced);
  }

  /** `scoreSteps` with each position's top-K and the log-probs of the requests' gatherIds (see Engine.scoreTopK). */
  scoreTopKSteps(requests: TopKScoreRequest[], k: number, opts: ScoreOptions = {}, paced = true): Generator<void, TopKScore[]> {
    const V = this.model.cfg.vocabSize;
    if (!Number.isInteger(k) || k < 0 || k > V) throw new EngineError('bad_request', `top-K scoring needs an integer k in 0..${V}, got ${k}`);
    for (const r of requests) {
      if (!r.gatherIds) continue;
      if (r.gatherIds.length !== r.responseIds.length) throw new EngineError('bad_request', `gatherIds has ${r.gatherIds.length} entries for ${r.responseIds.length} response tokens`);
      for (const ids of r.gatherIds) checkTokenIds(ids, V, 'gather id');
    }
    const { adapter, weights, caches } = this.scoringSetup(requests, opts);
    return this.paced(scoreStepsTopK(this.model, requests, adapter, opts.temperature ?? 1, () => this.scoringRows(paced), k, caches, weights), paced);
  }

  /** Rows of the next scoring step: through the worker (paced) a background step's worth, and only what the pacer's credit allows while users are in the engine. */
  private scoringRows(paced: boolean): number {
    const rows = this.pacer.rows(paced && this.servingUsers);
    if (!paced) return rows;
    return (this.backgroundRows = Math.min(this.background.rows(), rows));
  }

  /** whether a normal-priority sequence is decoding (what the pacer protects) */
  private decoding(): boolean { return this.running.some((s) => s.prefilled && s.params.priority !== 'low'); }

  /** whether a normal-priority (user-facing) request is waiting, prefilling or decoding: background scoring waits for it (worker.ts) */
  get servingUsers(): boolean {
    return this.running.some((s) => s.params.priority !== 'low') || this.waiting.some((s) => s.params.priority !== 'low');
  }

  /** Runs scoring passes, paying the time of each from the pacer's credit while sequences decode. */
  private *paced<T>(passes: Generator<void, T>, paced: boolean): Generator<void, T> {
    for (;;) {
      const paying = paced && this.decoding(), t0 = performance.now();
      this.backgroundRows = 0;
      const r = passes.next();
      const ms = performance.now() - t0;
      if (paying) this.pacer.background(ms);
      if (this.backgroundRows > 0) this.background.ran(ms, this.backgroundRows);
      if (r.done) return r.value;
      yield;
    }
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
        const hit = version !== null && this.prefixCache.enabled ? this.prefixCache.take(version, tokens, limit, false) : null;
        const c = hit?.cache ?? this.newKvCache();
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
    if (sel === 'current') return this.training.current();
    return this.versions.get(sel === 'published' ? this.published : sel);
  }

  adapterFor(sel: AdapterSelector): LoraAdapter | null { return this.versionFor(sel).adapter; }

  stats(): RuntimeStats {
    return {
      prefixCache: this.prefixCache.stats(), kvBudgetBytes: this.kvBudgetBytes, liveKvBytes: this.liveKvBytes, contextLength: this.contextLength,
      arenaUsedBytes: this.model.arena.usedBytes, arenaReservedBytes: this.model.arena.reservedBytes, prefillChunk: this.pacer.typicalRows(), pacer: this.pacer.state(),
      kvDtype: this.pages ? 'bf16' : 'f32', kvReservedBytes: this.pages?.reservedBytes ?? 0,
    };
  }

  /** Forget every cached prefix: for whoever changes the weights of an existing version in place. */
  clearPrefixCache(): void { this.prefixCache.clear(); }

  /** Versions whose adapter memory is held (for tests and /metrics). */
  get liveVersions(): number[] { return this.versions.live(); }

  /** Snapshot the trained weights as a new version; requests keep using the published one until it is published. */
  saveWeights(opts: { atLeast?: number } = {}): number {
    const atLeast = opts.atLeast ?? 0;
    if (!Number.isSafeInteger(atLeast) || atLeast < 0) throw new EngineError('bad_request', `atLeast must be a non-negative integer (got ${atLeast})`);
    const w = this.training.snapshot();
    return this.versions.add(w.adapter, atLeast, w.weights);
  }

  /** Serve `version` to requests that start from now on; running requests finish on theirs. */
  publish(version: number): void { this.versions.publish(version); }

  // ---- training (training-slot.ts) ----

  get trainer(): LoraTrainer | null { return this.training.trainer; }
  /** full-parameter training (configureTraining(null)); at most one of trainer and fullTrainer is set */
  get fullTrainer(): FullTrainer | null { return this.training.fullTrainer; }
  /** The optimizer step of whatever is being trained (null when nothing is). */
  get optimizerStep(): number | null { return this.training.optimizerStep; }

  /** A fresh LoRA adapter, or with `null` full-parameter training from the base weights. */
  configureTraining(lora: Partial<LoraConfig> | null = {}): void { this.training.configure(lora); }

  /**
   * The trainer for a forward-backward, its KL term reading the base model through base scoring here,
   * so prompts shared across steps come from the prefix cache (whichever way the trainer was made).
   */
  private stepTrainer(): LoraTrainer | FullTrainer {
    const tr = this.training.require();
    tr.baseScorer ??= (data, temperature) => this.score(data, { adapter: 'base', temperature });
    return tr;
  }

  forwardBackwardSteps(data: Datum[], spec: LossSpec): Generator<void, ForwardBackwardMetrics> { return this.stepTrainer().forwardBackwardSteps(data, spec); }

  forwardBackward(data: Datum[], spec: LossSpec): ForwardBackwardMetrics { return this.stepTrainer().forwardBackward(data, spec); }

  optimStep(p: AdamParams): OptimStepMetrics { return this.training.require().optimStep(p); }

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
    return this.versions.add(loadAdapter(dir, this.model.cfg, this.model.arena));
  }

  /** Checkpoint the trained weights with their optimizer state. */
  saveTrainingState(dir: string): void { this.training.save(dir, this.dir, this.info.modelId, this.versions.latestVersion); }

  /** Resume training from a checkpoint; also adds its weights as a new version (returned), numbered on from the checkpoint's. */
  loadTrainingState(dir: string): number {
    const loaded = this.training.load(dir);
    if (loaded.version !== null) this.versions.continueAfter(loaded.version - 1);
    return this.versions.add(loaded.adapter, 0, loaded.weights);
  }

  async close(): Promise<void> { await this.model.close(); }
}
