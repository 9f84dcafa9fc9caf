// TinkerEngine: the TrainingEngine interface over the Tinker HTTP API (Tinker cloud, a self-hosted
// SkyRL server, or `openclaw-rl serve-tinker`). Prompts are rendered and tokenized here (a local
// model folder gives the tokenizer, chat template and EOS ids); the server samples with exact ids
// and log-probs and trains a LoRA adapter. Each published version is its own sampling client
// (save_weights_for_sampler), so a swap never pauses or refuses a request: requests already
// running finish on the sampler they started with.
//
// Loss scaling: Tinker's losses are sums over tokens; this project's are token means over the
// optimizer step. forwardBackward therefore scales advantages (or cross-entropy weights) by
// 1/(loss tokens of the call); with one forwardBackward per optimStep, as the trainer does, the
// update is exactly the embedded engine's. Several calls before one step weigh equally per call.
import { writeFileSync, readFileSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import {
  EngineError, checkTokenIds, type TrainingEngine, type EngineInfo, type SampleEvent, type SampleParams, type ScoreOptions,
  type ScoreRequest, type Datum, type AdamParams, type ForwardBackwardMetrics, type OptimStepMetrics, type AdapterSelector,
  type LoraSettings, type Tokenizer,
} from '../types.ts';
import type { LossSpec } from '../../learn/losses.ts';
import { ppoToken, crossEntropyToken, PPO_DEFAULTS } from '../../learn/losses.ts';
import { ChatTokenizer } from '../embedded/tokenizer.ts';
import { SampleAssembler } from '../sample-assembler.ts';
import { loadConfig } from '../embedded/config.ts';
import { TinkerSession, TinkerRequestFailed, TinkerHttpError, type TinkerClientOptions } from './client.ts';
import { encodeForwardBackwardRequest } from './proto.ts';
import { extractTar, ArchiveError } from './archive.ts';
import { toWireDatum, wireLossConfig, toWireAdam, parseTinkerPath, type ForwardBackwardResult, type SampleResult, type WireSamplingParams } from './wire.ts';

export interface TinkerEngineOptions extends TinkerClientOptions {
  /** local model folder with tokenizer.json (+ chat template) and config.json of the base model */
  tokenizerDir: string;
  /** the base model's name on the server (default: the only one it lists) */
  baseModel?: string;
  /**
   * send the PPO loss as Tinker's `importance_sampling` (the ratio unclipped), for servers without
   * `ppo` (SkyRL's FSDP and Megatron backends); default 'ppo'
   */
  ppoAs?: 'ppo' | 'importance_sampling';
  /**
   * 'ephemeral' (default): each version is an in-memory sampler (hot swap, nothing stored);
   * 'named': each version is also a stored sampler checkpoint (tinker://…/sampler_weights/NAME),
   * so saveAdapter can download it as a PEFT folder (--trainer tinker behind vLLM / SGLang)
   */
  samplerCheckpoints?: 'ephemeral' | 'named';
}

/** A sampling client, and the stored checkpoint it samples from (named saves only). */
interface SamplerRef { id: string; seq: number; path?: string }

export class TinkerEngine implements TrainingEngine {
  readonly info: EngineInfo;
  readonly tokenizer: Tokenizer;
  readonly session: TinkerSession;
  readonly baseModel: string;
  private readonly tok: ChatTokenizer;
  private readonly o: TinkerEngineOptions;
  /** the server takes this project's extensions (serve-tinker): LoRA alpha, temperatures */
  readonly extensions: boolean;
  private modelId: string | null = null;
  private rank = 0;
  /** training seq ids start at 1 per training client */
  private trainSeq = 1;
  /** serialises submissions so seq ids reach the server in order */
  private submitChain: Promise<unknown> = Promise.resolve();
  private readonly samplers = new Map<number, SamplerRef>();
  private baseSampler: SamplerRef | null = null;
  /** a snapshot of the adapter being trained, for score(adapter: 'current') */
  private currentSnapshot: SamplerRef | null = null;
  private published = 0;
  private latest = 0;
  private optimizerStep = 0;
  private pendingTokens = 0;
  private closed = false;

  private constructor(o: TinkerEngineOptions, session: TinkerSession, baseModel: string, info: EngineInfo, tok: ChatTokenizer) {
    this.o = o; this.session = session; this.baseModel = baseModel; this.info = info; this.tok = tok; this.tokenizer = tok;
    this.extensions = session.config.openclaw_rl_extensions === 1;
  }

  static async connect(o: TinkerEngineOptions): Promise<TinkerEngine> {
    const cfg = loadConfig(o.tokenizerDir);
    const tok = ChatTokenizer.load(o.tokenizerDir);
    const session = await TinkerSession.open(o);
    try {
      const caps = await session.http.call('GET', '/api/v1/get_server_capabilities') as { supported_models?: { model_name: string; max_context_length?: number }[] };
      const models = caps.supported_models ?? [];
      let baseModel = o.baseModel;
      if (!baseModel) {
        if (models.length !== 1) throw new EngineError('bad_request', `the Tinker server lists ${models.length} models (${models.map((m) => m.model_name).join(', ')}): name one with --tinker-base-model`);
        baseModel = models[0].model_name;
      }
      const listed = models.find((m) => m.model_name === baseModel);
      const contextLength = Math.min(cfg.maxPositionEmbeddings, listed?.max_context_length ?? Infinity);
      const info: EngineInfo = {
        modelId: baseModel, modelType: cfg.modelType, contextLength, vocabSize: cfg.vocabSize, eosTokenIds: cfg.eosTokenIds,
        kernel: 'tinker', threads: 0, weightBytes: 0, sourceDtypes: [],
      };
      const engine = new TinkerEngine(o, session, baseModel, info, tok);
      const s = await session.http.call('POST', '/api/v1/create_sampling_session', {
        session_id: session.id, sampling_session_seq_id: session.nextSamplerSeq(), base_model: baseModel, type: 'create_sampling_session',
      }) as { sampling_session_id: string };
      engine.baseSampler = { id: s.sampling_session_id, seq: 0 };
      return engine;
    } catch (e) {
      session.close();
      throw e;
    }
  }

  // ---- errors ----

  private wrap(e: unknown, what: string): EngineError {
    if (e instanceof EngineError) return e;
    if (e instanceof TinkerRequestFailed) return new EngineError(e.category === 'user' ? 'bad_request' : 'internal', `${what}: ${e.message}`);
    if (e instanceof TinkerHttpError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429) return new EngineError('bad_request', `${what}: ${e.message}`);
    return new EngineError('internal', `${what}: ${(e as Error).message}`);
  }

  private checkOpen(): void { if (this.closed) throw new EngineError('closed', 'the engine has stopped'); }

  // ---- sampling ----

  private samplerFor(weights: SampleParams['weights'] | AdapterSelector | undefined): { ref: SamplerRef; version: number } {
    if (weights === 'base') return { ref: this.baseSampler!, version: 0 };
    const v = weights === undefined || weights === 'published' ? this.published : weights === 'current' ? -1 : weights;
    if (v === 0) return { ref: this.baseSampler!, version: 0 };
    const ref = this.samplers.get(v);
    if (!ref) throw new EngineError('bad_request', `weights version ${v} does not exist on this engine`);
    return { ref, version: v };
  }

  private wireSamplingParams(params: SampleParams): WireSamplingParams {
    const p: WireSamplingParams = {
      max_tokens: params.maxTokens, temperature: params.temperature, top_k: params.topK > 0 ? params.topK : -1, top_p: params.topP,
    };
    if (params.seed !== undefined) p.seed = params.seed;
    // the wire takes stop strings or stop ids, never both: strings win, ids (with EOS) are matched here too
    if (params.stop && params.stop.length > 0) p.stop = params.stop;
    else {
      const ids = [...new Set([...(params.stopTokenIds ?? []), ...(params.ignoreEos ? [] : this.info.eosTokenIds)])];
      if (ids.length > 0) p.stop = ids;
    }
    return p;
  }

  async *sample(promptIds: number[], params: SampleParams, signal?: AbortSignal): AsyncGenerator<SampleEvent> {
    this.checkOpen();
    if (promptIds.length === 0) throw new EngineError('bad_request', 'the prompt has no tokens');
    checkTokenIds(promptIds, this.info.vocabSize, 'prompt token id');
    if (promptIds.length >= this.info.contextLength) throw new EngineError('context_length_exceeded', `the prompt has ${promptIds.length} tokens; this model's context is ${this.info.contextLength} tokens, and at least one must remain for the answer`);
    const { ref, version } = this.samplerFor(params.weights);
    let wire: SampleResult;
    try {
      wire = await this.session.http.compute('/api/v1/asample', {
        sampling_session_id: ref.id, seq_id: ref.seq++, num_samples: 1,
        prompt: { chunks: [{ type: 'encoded_text', tokens: promptIds }] },
        sampling_params: this.wireSamplingParams(params), prompt_logprobs: false, topk_prompt_logprobs: 0, type: 'sample',
      }, 'sample', { signal }) as SampleResult;
    } catch (e) {
      if (signal?.aborted) {
        yield { type: 'done', result: { ids: [], logprobs: [], text: '', finishReason: 'abort', promptTokens: promptIds.length, policyVersion: version } };
        return;
      }
      throw this.wrap(e, 'sampling');
    }
    const seq = wire.sequences?.[0];
    if (!seq || !Array.isArray(seq.tokens)) throw new EngineError('internal', 'the Tinker server answered a sample without sequences');
    if (!seq.logprobs || seq.logprobs.length !== seq.tokens.length) throw new EngineError('internal', 'the Tinker server did not return a log-prob for every sampled token');
    // text, stop ids and stop strings exactly as the embedded engine reports them
    const asm = new SampleAssembler(this.tok, promptIds, params, this.info.eosTokenIds);
    for (let i = 0; i < seq.tokens.length && !asm.ended; i++) {
      const ready = asm.push(seq.tokens[i], seq.logprobs[i]);
      if (ready) yield { type: 'token', token: ready };
    }
    const { last, result } = asm.finish(seq.stop_reason === 'length' ? 'length' : 'stop', promptIds.length, version);
    if (last) yield { type: 'token', token: last };
    yield { type: 'done', result };
  }

  /** Teacher-forced log-probs through prompt log-probs of a one-token sample over prompt + response. */
  async score(requests: ScoreRequest[], opts: ScoreOptions = {}): Promise<Float32Array[]> {
    this.checkOpen();
    for (const { promptIds, responseIds } of requests) {
      if (promptIds.length === 0) throw new EngineError('bad_request', 'scoring needs at least one prompt token');
      if (promptIds.length + responseIds.length - 1 > this.info.contextLength) throw new EngineError('context_length_exceeded', `prompt + response is ${promptIds.length + responseIds.length} tokens; this model's context is ${this.info.contextLength}`);
      checkTokenIds(promptIds, this.info.vocabSize);
      checkTokenIds(responseIds, this.info.vocabSize);
    }
    const ref = opts.adapter === 'current' ? await this.currentSampler() : this.samplerFor(opts.adapter).ref;
    const temperature = opts.temperature ?? 1;
    try {
      return await Promise.all(requests.map(async ({ promptIds, responseIds }) => {
        if (responseIds.length === 0) return new Float32Array(0);
        const r = await this.session.http.compute('/api/v1/asample', {
          sampling_session_id: ref.id, seq_id: ref.seq++, num_samples: 1,
          prompt: { chunks: [{ type: 'encoded_text', tokens: [...promptIds, ...responseIds] }] },
          sampling_params: { max_tokens: 1, temperature: 1 }, prompt_logprobs: true, topk_prompt_logprobs: 0, type: 'sample',
          // an extension of serve-tinker (log-probs of softmax(logits / T)); sent only when T ≠ 1
          ...(temperature !== 1 && this.extensions ? { prompt_logprobs_temperature: temperature } : {}),
        }, 'sample') as SampleResult;
        const lps = r.prompt_logprobs;
        if (!lps || lps.length !== promptIds.length + responseIds.length) throw new EngineError('internal', 'the Tinker server did not return prompt log-probs for every token');
        return Float32Array.from(lps.slice(promptIds.length), (x) => x ?? NaN);
      }));
    } catch (e) {
      throw this.wrap(e, 'scoring');
    }
  }

  private async currentSampler(): Promise<SamplerRef> {
    if (!this.modelId) throw new EngineError('bad_request', "no adapter is being trained: 'current' needs configureTraining first");
    this.currentSnapshot ??= await this.snapshot();
    return this.currentSnapshot;
  }

  // ---- training ----

  /** Submit a training request with the next seq id (in call order), then wait for its result. */
  private async train(path: string, body: (seq: number) => unknown, kind: 'forward_backward' | 'other' = 'other', proto?: (seq: number) => Uint8Array): Promise<unknown> {
    this.checkOpen();
    if (!this.modelId) throw new EngineError('bad_request', 'training is not configured: call configureTraining first');
    const submitted = this.submitChain.then(() => {
      const seq = this.trainSeq++;
      return this.session.http.submit(path, body(seq), proto ? { proto: proto(seq) } : {});
    });
    this.submitChain = submitted.catch(() => {});
    const f = await submitted;
    return this.session.http.retrieve(f.request_id, kind);
  }

  async configureTraining(lora: LoraSettings | null = {}): Promise<void> {
    this.checkOpen();
    if (lora === null) throw new EngineError('bad_request', 'the Tinker API trains LoRA adapters only: full-parameter training needs the embedded engine');
    const rank = lora.rank ?? 16;
    try {
      const r = await this.session.http.compute('/api/v1/create_model', {
        session_id: this.session.id, model_seq_id: this.session.nextModelSeq(), base_model: this.baseModel,
        lora_config: {
          rank, ...(lora.seed !== undefined ? { seed: lora.seed } : {}), train_unembed: false, train_mlp: true, train_attn: true,
          // other servers fix alpha themselves (SkyRL: 32)
          ...(this.extensions && lora.alpha !== undefined ? { alpha: lora.alpha } : {}),
        },
        type: 'create_model',
      }) as { model_id?: string };
      if (typeof r.model_id !== 'string') throw new EngineError('internal', 'create_model answered without a model_id');
      this.modelId = r.model_id; this.rank = rank; this.trainSeq = 1; this.currentSnapshot = null; this.pendingTokens = 0;
    } catch (e) {
      throw this.wrap(e, 'create_model');
    }
  }

  async forwardBackward(data: Datum[], loss: LossSpec): Promise<ForwardBackwardMetrics> {
    if (data.length === 0) throw new EngineError('bad_request', 'forwardBackward needs at least one datum');
    if (loss.kind === 'ppo' && (loss.klCoef ?? 0) > 0) throw new EngineError('bad_request', 'the Tinker API has no KL-to-base term: use --kl-coef 0 with --engine tinker');
    if (loss.kind === 'ppo' && (loss.entropyGuard ?? 0) > 0) throw new EngineError('bad_request', 'the Tinker API has no entropy guard: use --entropy-guard 0 with --engine tinker');
    if (data.some((d) => d.distill)) throw new EngineError('bad_request', 'the Tinker API has no top-K distillation loss: use --opd-mode token with --engine tinker');
    if (data.some((d) => d.unlikelihood?.some((w) => w > 0))) throw new EngineError('bad_request', 'the Tinker API has no unlikelihood loss: use --loop-unlikelihood 0 with --engine tinker');
    for (const d of data) {
      const n = d.responseIds.length;
      if (d.promptIds.length === 0 || n === 0) throw new EngineError('bad_request', 'a datum needs at least one prompt and one response token');
      checkTokenIds(d.promptIds, this.info.vocabSize); checkTokenIds(d.responseIds, this.info.vocabSize);
      for (const k of ['advantages', 'behaviourLogprobs', 'lossMask', 'teacherLogprobs'] as const) {
        if (d[k] && d[k]!.length !== n) throw new EngineError('bad_request', `${k} has ${d[k]!.length} values for ${n} response tokens`);
      }
      if (loss.kind === 'ppo' && (!d.advantages || !d.behaviourLogprobs)) throw new EngineError('bad_request', 'the ppo loss needs advantages and behaviourLogprobs for every response token');
    }
    const unclipped = loss.kind === 'ppo' && this.o.ppoAs === 'importance_sampling';
    const tokens = data.reduce((a, d) => a + (d.lossMask ? d.lossMask.reduce((s, m) => s + m, 0) : d.responseIds.length), 0);
    const scale = 1 / Math.max(tokens, 1e-12);
    // one call per sampling temperature (log-probs are of softmax(logits / T))
    const groups = new Map<number, number[]>();
    data.forEach((d, i) => { const t = d.temperature ?? loss.temperature ?? 1; groups.set(t, [...(groups.get(t) ?? []), i]); });
    const learner: number[][] = new Array(data.length);
    try {
      await Promise.all([...groups].map(async ([temperature, idx]) => {
        const wireLoss = unclipped ? { loss_fn: 'importance_sampling', ...(this.extensions && temperature !== 1 ? { loss_fn_config: { temperature } } : {}) } : wireLossConfig(loss, this.extensions ? temperature : 1);
        const input = { ...wireLoss, data: idx.map((i) => toWireDatum(data[i], loss, scale)) };
        const useProto = this.session.http.o.wire === 'proto';
        const r = await this.train('/api/v1/forward_backward', (seq) => ({ model_id: this.modelId, seq_id: seq, forward_backward_input: input }), 'forward_backward',
          useProto ? (seq) => encodeForwardBackwardRequest({ model_id: this.modelId!, seq_id: seq, forward_only: false, input }) : undefined) as ForwardBackwardResult;
        if (!Array.isArray(r.loss_fn_outputs) || r.loss_fn_outputs.length !== idx.length) throw new EngineError('internal', `forward_backward returned ${r.loss_fn_outputs?.length} outputs for ${idx.length} datums`);
        idx.forEach((i, k) => {
          const d = data[i], lp = r.loss_fn_outputs[k].logprobs?.data;
          if (!lp) throw new EngineError('internal', 'forward_backward returned no learner log-probs');
          learner[i] = lp.slice(d.promptIds.length - 1, d.promptIds.length - 1 + d.responseIds.length);
        });
      }));
    } catch (e) {
      throw this.wrap(e, 'forward_backward');
    }
    this.pendingTokens += tokens;
    // the call's metrics from the learner log-probs, by the same per-token formulas as the loss
    const ppo = loss.kind === 'ppo' ? { ...PPO_DEFAULTS, ...loss, ...(unclipped ? { clipLow: 1, clipHigh: Number.MAX_VALUE } : {}) } : null;
    let lossSum = 0, clipped = 0, ratio = 0, gap = 0, gapTokens = 0;
    data.forEach((d, i) => d.responseIds.forEach((_, t) => {
      const mask = d.lossMask?.[t] ?? 1;
      if (mask === 0) return;
      if (ppo) {
        const term = ppoToken(learner[i][t], d.behaviourLogprobs![t], d.advantages![t], ppo.clipLow, ppo.clipHigh);
        lossSum += term.loss * mask; ratio += term.ratio; if (term.clipped) clipped++;
        if (d.teacherLogprobs) { gap += Math.abs(d.teacherLogprobs[t] - d.behaviourLogprobs![t]); gapTokens++; }
      } else lossSum += crossEntropyToken(learner[i][t]).loss * mask;
    }));
    const n = Math.max(tokens, 1e-12);
    return {
      loss: lossSum / n, tokens, clipFraction: ppo ? clipped / n : 0, meanRatio: ppo ? ratio / n : 1, kl: null,
      teacherBehaviourGap: gapTokens > 0 ? gap / gapTokens : null, logprobs: learner, gradNorm: NaN,
    };
  }

  async optimStep(adam: AdamParams): Promise<OptimStepMetrics> {
    if (!(adam.learningRate >= 0)) throw new EngineError('bad_request', `learningRate must be a non-negative number (got ${adam.learningRate})`);
    const tokens = this.pendingTokens;
    this.pendingTokens = 0;
    try {
      const r = await this.train('/api/v1/optim_step', (seq) => ({ model_id: this.modelId, seq_id: seq, adam_params: toWireAdam(adam), type: 'optim_step' })) as { metrics?: Record<string, number> };
      this.optimizerStep++;
      this.currentSnapshot = null;
      const normKey = Object.keys(r.metrics ?? {}).find((k) => k.includes('grad_norm'));
      return { step: this.optimizerStep, gradNorm: normKey ? r.metrics![normKey] : NaN, skipped: false, tokens, learningRate: adam.learningRate };
    } catch (e) {
      // a refused step leaves the adapter as it was (serve-tinker refuses non-finite gradients)
      if (e instanceof TinkerRequestFailed) return { step: this.optimizerStep, gradNorm: NaN, skipped: true, reason: e.message, tokens, learningRate: adam.learningRate };
      throw this.wrap(e, 'optim_step');
    }
  }

  /** An ephemeral sampler snapshot of the adapter as trained so far. */
  private async snapshot(): Promise<SamplerRef> {
    try {
      const r = await this.train('/api/v1/save_weights_for_sampler', (seq) => ({
        model_id: this.modelId, seq_id: seq, sampling_session_seq_id: this.session.nextSamplerSeq(), type: 'save_weights_for_sampler',
      })) as { sampling_session_id?: string };
      if (typeof r.sampling_session_id !== 'string') throw new EngineError('internal', 'save_weights_for_sampler answered without a sampling_session_id');
      return { id: r.sampling_session_id, seq: 0 };
    } catch (e) {
      throw this.wrap(e, 'save_weights_for_sampler');
    }
  }

  /** A stored sampler checkpoint of the adapter as trained so far, and a sampling client over it. */
  private async namedSnapshot(version: number): Promise<SamplerRef> {
    const name = `openclaw-rl-v${version}-${Date.now().toString(36)}`;
    let path: string;
    try {
      const r = await this.train('/api/v1/save_weights_for_sampler', (seq) => ({ model_id: this.modelId, path: name, seq_id: seq, type: 'save_weights_for_sampler' })) as { path?: string };
      if (typeof r.path !== 'string') throw new EngineError('internal', 'save_weights_for_sampler answered without a path');
      path = r.path;
    } catch (e) {
      throw this.wrap(e, 'save_weights_for_sampler');
    }
    try {
      const s = await this.session.http.call('POST', '/api/v1/create_sampling_session', {
        session_id: this.session.id, sampling_session_seq_id: this.session.nextSamplerSeq(), model_path: path, type: 'create_sampling_session',
      }) as { sampling_session_id?: string };
      if (typeof s.sampling_session_id !== 'string') throw new EngineError('internal', 'create_sampling_session answered without a sampling_session_id');
      return { id: s.sampling_session_id, seq: 0, path };
    } catch (e) {
      throw this.wrap(e, 'create_sampling_session');
    }
  }

  async saveWeights(opts: { atLeast?: number } = {}): Promise<number> {
    if (this.o.samplerCheckpoints === 'named') {
      this.checkOpen();
      if (!this.modelId) throw new EngineError('bad_request', 'nothing to save: configureTraining first');
      const v = Math.max(this.latest + 1, opts.atLeast ?? 0);
      const ref = await this.namedSnapshot(v);
      this.latest = Math.max(this.latest, v);
      this.currentSnapshot = ref;
      this.samplers.set(v, ref);
      return v;
    }
    const ref = this.currentSnapshot ?? await this.snapshot();
    this.currentSnapshot = ref;
    // numbered above every earlier version and the caller's durable floor (see TrainingEngine.saveWeights)
    const v = this.latest = Math.max(this.latest + 1, opts.atLeast ?? 0);
    this.samplers.set(v, ref);
    return v;
  }

  async publish(version: number): Promise<void> {
    if (version !== 0 && !this.samplers.has(version)) throw new EngineError('bad_request', `weights version ${version} does not exist`);
    this.published = version;
    // forget old sampler handles (requests running on them hold their own reference)
    for (const v of this.samplers.keys()) if (v < version - 8) this.samplers.delete(v);
  }

  /**
   * Download a version's stored sampler checkpoint (a PEFT adapter archive) into `dir`. Versions are
   * stored when the engine runs with samplerCheckpoints: 'named'; 'current' stores one now.
   */
  async saveAdapter(dir: string, sel: AdapterSelector = 'published'): Promise<void> {
    this.checkOpen();
    if (sel === 'base' || (sel === 'published' && this.published === 0) || sel === 0) throw new EngineError('bad_request', 'the base model has no adapter to save');
    let ref: SamplerRef | undefined;
    if (sel === 'current') {
      if (!this.modelId) throw new EngineError('bad_request', "nothing is being trained: 'current' needs configureTraining first");
      ref = await this.namedSnapshot(this.latest + 1);
    } else {
      const v = sel === 'published' ? this.published : sel;
      ref = this.samplers.get(v);
      if (!ref) throw new EngineError('bad_request', `weights version ${v} does not exist on this engine`);
    }
    if (!ref.path) {
      throw new EngineError('bad_request', 'this version is an ephemeral Tinker sampler with no stored checkpoint to download: run with named sampler checkpoints (as --trainer tinker does) to write versions as adapters');
    }
    const p = parseTinkerPath(ref.path);
    try {
      const { url } = await this.session.http.archiveUrl(p.runId, `${p.kind ?? 'sampler_weights'}/${p.name}`);
      extractTar(await this.session.http.download(url), dir);
    } catch (e) {
      if (e instanceof ArchiveError) throw new EngineError('internal', `the checkpoint archive of ${ref.path}: ${e.message}`);
      throw this.wrap(e, `downloading ${ref.path}`);
    }
  }

  async saveModel(): Promise<void> {
    throw new EngineError('bad_request', 'weights trained over Tinker stay on the Tinker server: a Hugging Face folder cannot be written here (download the checkpoint with the Tinker tools)');
  }

  /** A tinker://…/sampler_weights/NAME URI becomes a new version (a sampling client over it). */
  async loadAdapter(dir: string): Promise<number> {
    if (!dir.startsWith('tinker://')) throw new EngineError('bad_request', `--engine tinker loads adapters by tinker:// URI, not from a local folder ('${dir}')`);
    try {
      const r = await this.session.http.call('POST', '/api/v1/create_sampling_session', {
        session_id: this.session.id, sampling_session_seq_id: this.session.nextSamplerSeq(), model_path: dir, type: 'create_sampling_session',
      }) as { sampling_session_id: string };
      const v = ++this.latest;
      this.samplers.set(v, { id: r.sampling_session_id, seq: 0 });
      return v;
    } catch (e) {
      throw this.wrap(e, 'create_sampling_session');
    }
  }

  /** A training checkpoint on the server (weights + optimizer), named in `dir`/trainer_state.json. */
  async saveTrainingState(dir: string): Promise<void> {
    const name = `openclaw-rl-step-${this.optimizerStep}-${Date.now()}`;
    let r: { path?: string };
    try {
      r = await this.train('/api/v1/save_weights', (seq) => ({ model_id: this.modelId, path: name, seq_id: seq, type: 'save_weights' })) as { path?: string };
    } catch (e) {
      throw this.wrap(e, 'save_weights');
    }
    if (typeof r.path !== 'string') throw new EngineError('internal', 'save_weights answered without a path');
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, 'trainer_state.json.tmp');
    writeFileSync(tmp, JSON.stringify({ optimizerStep: this.optimizerStep, version: this.latest, tinker: { path: r.path, baseModel: this.baseModel, rank: this.rank } }) + '\n');
    renameSync(tmp, join(dir, 'trainer_state.json'));
  }

  async loadTrainingState(dir: string): Promise<number> {
    const file = join(dir, 'trainer_state.json');
    if (!existsSync(file)) throw new EngineError('bad_request', `${dir} holds no trainer_state.json`);
    const state = JSON.parse(readFileSync(file, 'utf8')) as { optimizerStep?: number; version?: number; tinker?: { path: string; baseModel: string; rank: number } };
    if (!state.tinker?.path) throw new EngineError('bad_request', `${dir} is not a checkpoint of --engine tinker (no tinker:// path in trainer_state.json)`);
    if (state.tinker.baseModel !== this.baseModel) throw new EngineError('bad_request', `the checkpoint in ${dir} trains '${state.tinker.baseModel}', not '${this.baseModel}'`);
    await this.configureTraining({ rank: state.tinker.rank });
    try {
      await this.train('/api/v1/load_weights', (seq) => ({ model_id: this.modelId, path: state.tinker!.path, seq_id: seq, optimizer: true, type: 'load_weights' }));
    } catch (e) {
      throw this.wrap(e, 'load_weights');
    }
    this.optimizerStep = state.optimizerStep ?? 0;
    // numbering continues from the checkpoint's version
    this.latest = Math.max(this.latest, (state.version ?? 1) - 1);
    return this.saveWeights();
  }

  async versions(): Promise<{ published: number; live: number[]; optimizerStep: number | null }> {
    return { published: this.published, live: [0, ...this.samplers.keys()].sort((a, b) => a - b), optimizerStep: this.modelId ? this.optimizerStep : null };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.session.close();
  }
}
