// The embedded engine inside one thread: model + tokenizer + a batch scheduler. Every step runs
// one forward pass over the prompts of newly admitted sequences and the last token of every
// decoding sequence, so concurrent requests share each pass over the weights.
// The worker (engine/embedded/worker.ts) drives this; tests may use it directly.
import { basename } from 'node:path';
import { Transformer, type LoadOptions, type BatchItem } from './model.ts';
import { ChatTokenizer } from './tokenizer.ts';
import type { KvCache } from './kv-cache.ts';
import { sampleToken } from './sampler.ts';
import { Rng, randomSeed } from './rng.ts';
import { IncrementalDecoder, StopMatcher } from './detokenize.ts';
import { logSumExp } from './ops/logits.ts';
import { EngineError, type EngineInfo, type SampleParams, type SampleResult, type SampledToken, type ScoreRequest, type ScoreOptions } from '../types.ts';

export interface Sequence {
  readonly key: number;
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
/** Rows of logits computed at once when scoring (bounds memory to rows × vocab floats). */
const SCORE_ROWS = 64;
/** Tokens of several scoring requests packed into one forward pass. */
const SCORE_BATCH_ROWS = 2048;

export class EmbeddedRuntime {
  readonly model: Transformer;
  readonly tokenizer: ChatTokenizer;
  readonly info: EngineInfo;
  policyVersion = 0;
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
    for (const id of promptIds) if (!Number.isInteger(id) || id < 0 || id >= V) throw new EngineError('bad_request', `prompt token id ${id} is outside the vocabulary (0..${V - 1})`);
    if (promptIds.length >= this.model.maxContext) {
      throw new EngineError('context_length_exceeded', `the prompt has ${promptIds.length} tokens; this model's context is ${this.model.maxContext} tokens, and at least one must remain for the answer`);
    }
    const key = this.nextKey++;
    const stopIds = new Set<number>(params.stopTokenIds ?? []);
    if (!params.ignoreEos) for (const id of this.model.cfg.eosTokenIds) stopIds.add(id);
    this.waiting.push({
      key, promptIds, params, cache: this.model.newCache(), ids: [], logprobs: [],
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
    let budget = PREFILL_BUDGET;
    while (this.waiting.length > 0 && (budget >= this.waiting[0].promptIds.length || (this.running.length === 0 && budget === PREFILL_BUDGET))) {
      const s = this.waiting.shift()!;
      budget -= s.promptIds.length;
      this.running.push(s);
    }
    if (this.running.length === 0) return out;

    const items: BatchItem[] = this.running.map((s) => ({ tokens: s.prefilled ? [s.ids[s.ids.length - 1]] : s.promptIds, cache: s.cache }));
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
      out.push({ key: s.key, token: { id: c.id, logprob: c.logprob, text }, result: null });
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
    return { ids: s.ids, logprobs: s.logprobs, text: s.stops.fullText, finishReason: reason, stoppedBy, promptTokens: s.promptIds.length, policyVersion: this.policyVersion };
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

  /**
   * Teacher-forced log-probs of each response token (see ScoreOptions). Requests are packed into
   * shared forward passes of up to SCORE_BATCH_ROWS tokens; only response rows get logits, a
   * chunk of SCORE_ROWS rows at a time, so no [tokens × vocab] matrix is ever held.
   */
  score(requests: ScoreRequest[], opts: ScoreOptions = {}): Float32Array[] {
    const V = this.model.cfg.vocabSize;
    for (const { promptIds, responseIds } of requests) {
      if (promptIds.length === 0) throw new EngineError('bad_request', 'scoring needs at least one prompt token');
      const total = promptIds.length + responseIds.length;
      if (total - 1 > this.model.maxContext) throw new EngineError('context_length_exceeded', `prompt + response is ${total} tokens; this model's context is ${this.model.maxContext}`);
      for (const id of promptIds) if (!Number.isInteger(id) || id < 0 || id >= V) throw new EngineError('bad_request', `token id ${id} is outside the vocabulary (0..${V - 1})`);
      for (const id of responseIds) if (!Number.isInteger(id) || id < 0 || id >= V) throw new EngineError('bad_request', `token id ${id} is outside the vocabulary (0..${V - 1})`);
    }
    const results = requests.map((r) => new Float32Array(r.responseIds.length));
    let i = 0;
    while (i < requests.length) {
      // the last response token predicts nothing we need, so it is not fed
      const inputLen = (r: ScoreRequest) => r.promptIds.length + Math.max(0, r.responseIds.length - 1);
      let rows = inputLen(requests[i]);
      let j = i + 1;
      while (j < requests.length && rows + inputLen(requests[j]) <= SCORE_BATCH_ROWS) rows += inputLen(requests[j++]);
      this.scoreBatch(requests.slice(i, j), results.slice(i, j), 1 / (opts.temperature ?? 1));
      i = j;
    }
    return results;
  }

  private scoreBatch(requests: ScoreRequest[], out: Float32Array[], invT: number): void {
    const { hiddenSize: H, vocabSize: V } = this.model.cfg;
    const caches = requests.map(() => this.model.newCache());
    const logits = this.model.arena.alloc(SCORE_ROWS * V);
    try {
      const hidden = this.model.forward(requests.map((r, k) => ({ tokens: [...r.promptIds, ...r.responseIds.slice(0, -1)], cache: caches[k] })));
      let base = 0; // first hidden row of this request
      requests.forEach(({ promptIds, responseIds }, k) => {
        const first = base + promptIds.length - 1; // the row whose output predicts responseIds[0]
        for (let r0 = 0; r0 < responseIds.length; r0 += SCORE_ROWS) {
          const rows = Math.min(SCORE_ROWS, responseIds.length - r0);
          this.model.logits(logits, hidden.subarray((first + r0) * H, (first + r0 + rows) * H), rows);
          for (let t = 0; t < rows; t++) out[k][r0 + t] = logits[t * V + responseIds[r0 + t]] * invT - logSumExp(logits, t * V, V, invT);
        }
        base += promptIds.length + Math.max(0, responseIds.length - 1);
      });
    } finally {
      this.model.arena.free(logits);
      for (const c of caches) c.release();
    }
  }

  async close(): Promise<void> { await this.model.close(); }
}
