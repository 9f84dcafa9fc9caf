// serve-tinker's sampling side: sampling clients (over the base, a stored sampler checkpoint, or an
// in-memory snapshot of the training client), and asample with exact ids and log-probs, prompt
// log-probs and top-k prompt log-probs. Samplers over stored checkpoints are recorded in the session
// registry, so they are rebuilt after a restart; snapshot samplers live as long as the process.
import { existsSync } from 'node:fs';
import { collect, type TrainingEngine } from '../types.ts';
import type { FutureStore } from './futures.ts';
import type { CheckpointStore } from './checkpoints.ts';
import type { SessionRegistry } from './sessions.ts';
import { parseTinkerPath, tokensOf, type SampleResult, type WireSamplingParams, type ModelInput } from './wire.ts';
import { HttpError, samplingParams, intField, optionalInt } from './server-http.ts';

interface Sampler { id: string; weights: number | 'base'; modelPath: string | null }

/** what a persisted sampler over the base model records in place of a checkpoint path */
const BASE_SAMPLER = 'base';
/** most alternatives per prompt position answered (topk_prompt_logprobs) */
const MAX_TOPK = 100;

export interface TinkerSamplersDeps {
  engine: TrainingEngine;
  modelName: string;
  store: CheckpointStore;
  sessions: SessionRegistry;
  futures: FutureStore;
  /** the id of a live session, or a 404 HttpError */
  session(id: unknown): string;
}

export class TinkerSamplers {
  private readonly samplers = new Map<string, Sampler>();
  /** named sampler checkpoints already loaded: path → version */
  private readonly loadedPaths = new Map<string, number>();

  private readonly d: TinkerSamplersDeps;

  constructor(d: TinkerSamplersDeps) { this.d = d; }

  /** A named sampler checkpoint was just written from weights version `version`. */
  rememberCheckpoint(path: string, version: number): void { this.loadedPaths.set(path, version); }

  /** An ephemeral sampler over in-memory weights version `version` (save_weights_for_sampler without a path). */
  addSnapshot(id: string, version: number): void { this.samplers.set(id, { id, weights: version, modelPath: null }); }

  /** A session ended: its samplers go with it. */
  endSession(sessionId: string): void {
    for (const sid of [...this.samplers.keys()]) if (sid.startsWith(`${sessionId}:`)) this.samplers.delete(sid);
  }

  private async samplerFor(path: string): Promise<number> {
    const known = this.loadedPaths.get(path);
    const live = known !== undefined ? (await this.d.engine.versions()).live : [];
    if (known !== undefined && live.includes(known)) return known;
    const p = parseTinkerPath(path);
    const dir = this.d.store.dir(p.runId, p.kind ?? 'sampler_weights', p.name);
    if (!existsSync(dir)) throw new HttpError(404, `checkpoint '${path}' does not exist on this server`);
    const v = await this.d.engine.loadAdapter(dir);
    this.loadedPaths.set(path, v);
    return v;
  }

  async createSamplingSession(b: Record<string, unknown>): Promise<object> {
    const sessionId = this.d.session(b.session_id);
    const seq = intField(b, 'sampling_session_seq_id', 0);
    const id = `${sessionId}:sample:${seq}`;
    const hasBase = typeof b.base_model === 'string', hasPath = typeof b.model_path === 'string';
    if (hasBase === hasPath) throw new HttpError(400, 'name exactly one of base_model and model_path');
    if (hasBase && b.base_model !== this.d.modelName) throw new HttpError(400, `base_model '${String(b.base_model)}' is not served here (this server serves '${this.d.modelName}')`);
    const weights = hasPath ? await this.samplerFor(b.model_path as string) : 'base';
    this.samplers.set(id, { id, weights, modelPath: hasPath ? (b.model_path as string) : null });
    // a sampler over a stored checkpoint (or the base) is rebuilt after a restart
    this.d.sessions.addSampler(sessionId, id, hasPath ? (b.model_path as string) : BASE_SAMPLER);
    return { sampling_session_id: id, type: 'create_sampling_session' };
  }

  /** A sampler by id: in memory, or rebuilt from a persisted session (after a restart). */
  private async sampler(id: string): Promise<Sampler | null> {
    const known = this.samplers.get(id);
    if (known) return known;
    const path = this.d.sessions.samplerPath(id);
    if (path === null) return null;
    const s: Sampler = { id, weights: path === BASE_SAMPLER ? 'base' : await this.samplerFor(path), modelPath: path === BASE_SAMPLER ? null : path };
    this.samplers.set(id, s);
    return s;
  }

  async samplerInfo(id: string): Promise<object> {
    const s = await this.sampler(id);
    if (!s) throw new HttpError(404, `unknown sampler '${id}'`);
    return { sampler_id: id, base_model: this.d.modelName, ...(s.modelPath ? { model_path: s.modelPath } : {}) };
  }

  async asample(b: Record<string, unknown>): Promise<object> {
    let weights: number | 'base', owner: string;
    if (typeof b.sampling_session_id === 'string') {
      const s = await this.sampler(b.sampling_session_id);
      if (!s) throw new HttpError(404, `unknown sampling_session_id '${b.sampling_session_id}' (samplers of in-memory snapshots do not survive a restart or the end of their session)`);
      weights = s.weights; owner = s.id;
    } else if (typeof b.model_path === 'string') { weights = await this.samplerFor(b.model_path); owner = b.model_path; }
    else if (typeof b.base_model === 'string') {
      if (b.base_model !== this.d.modelName) throw new HttpError(400, `base_model '${b.base_model}' is not served here`);
      weights = 'base'; owner = 'base';
    } else throw new HttpError(400, 'asample needs sampling_session_id, model_path or base_model');
    if (!b.prompt || typeof b.prompt !== 'object') throw new HttpError(400, 'prompt (a ModelInput) is required');
    const prompt = tokensOf(b.prompt as ModelInput);
    const info = this.d.engine.info;
    if (prompt.length === 0) throw new HttpError(400, 'the prompt has no tokens');
    for (const id of prompt) if (id < 0 || id >= info.vocabSize) throw new HttpError(400, `prompt token id ${id} is outside the vocabulary (0..${info.vocabSize - 1})`);
    const n = intField(b, 'num_samples', 1);
    if (n < 1 || n > 64) throw new HttpError(400, `num_samples must be between 1 and 64 (got ${n})`);
    const params = samplingParams((b.sampling_params ?? {}) as WireSamplingParams, weights, Math.max(1, info.contextLength - prompt.length));
    const topk = b.topk_prompt_logprobs === undefined || b.topk_prompt_logprobs === null ? 0 : b.topk_prompt_logprobs;
    if (!Number.isInteger(topk) || (topk as number) < 0 || (topk as number) > Math.min(info.vocabSize, MAX_TOPK)) throw new HttpError(400, `topk_prompt_logprobs must be an integer between 0 and ${Math.min(info.vocabSize, MAX_TOPK)} (got ${JSON.stringify(b.topk_prompt_logprobs)})`);
    const k = topk as number;
    if (k > 0 && !this.d.engine.scoreTopK) throw new HttpError(400, 'topk_prompt_logprobs: this engine cannot report top-k log-probs');
    const wantPrompt = b.prompt_logprobs === true || k > 0;
    // an extension of this server: prompt log-probs of softmax(logits / T) (default 1, as Tinker's)
    const promptTemperature = b.prompt_logprobs_temperature ?? 1;
    if (typeof promptTemperature !== 'number' || !(promptTemperature > 0)) throw new HttpError(400, 'prompt_logprobs_temperature must be a positive number');
    const seq = optionalInt(b, 'seq_id');
    const run = async (): Promise<SampleResult> => {
      const results = await Promise.all(Array.from({ length: n }, (_, i) => collect(this.d.engine.sample(prompt, { ...params, ...(params.seed !== undefined ? { seed: params.seed + i } : {}) }))));
      const out: SampleResult = {
        type: 'sample',
        sequences: results.map((r) => ({ stop_reason: r.finishReason === 'length' ? 'length' : 'stop', tokens: r.ids, logprobs: r.logprobs })),
      };
      if (wantPrompt) {
        // every position but the first, scored as a response to the first token
        const req = [{ promptIds: [prompt[0]], responseIds: prompt.slice(1) }], opts = { adapter: weights, temperature: promptTemperature };
        if (k > 0) {
          const [r] = prompt.length > 1 ? await this.d.engine.scoreTopK!(req, k, opts) : [{ logprobs: new Float32Array(0), topIds: [], topLogprobs: [], gathered: null }];
          out.prompt_logprobs = [null, ...Array.from(r.logprobs)];
          out.topk_prompt_logprobs = [null, ...r.topIds.map((ids, t) => ids.map((id, j): [number, number] => [id, r.topLogprobs[t][j]]))];
        } else {
          const [lps] = prompt.length > 1 ? await this.d.engine.score(req, opts) : [new Float32Array(0)];
          out.prompt_logprobs = [null, ...Array.from(lps)];
        }
      }
      return out;
    };
    const requestId = this.d.futures.submit('sample', run, seq !== undefined ? { dedupeKey: `${owner}#${seq}`, payload: b } : {});
    return { request_id: requestId, sample_sequence_ids: Array.from({ length: n }, (_, i) => `${requestId}:${i}`) };
  }
}
