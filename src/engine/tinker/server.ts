// `openclaw-rl serve-tinker`: a TrainingEngine (the embedded CPU engine) behind the Tinker HTTP API,
// the subset the Python SDK, tinker-cookbook and OpenClaw-RL's Tinker mode use: handshake,
// sessions + heartbeat, one LoRA training client at a time, forward_backward (JSON or protobuf
// body) with cross_entropy / importance_sampling / ppo, optim_step, save/load weights by
// tinker:// URI, sampler snapshots (ephemeral or named), sampling with exact ids and log-probs
// (+ prompt log-probs), and futures fetched by long-polling retrieve_future (protobuf results when
// the client accepts them).
//
// It lives beside the client in engine/tinker/ because both halves share the wire types and the
// codec, and because it is an engine adapter, not part of the OpenAI-compatible API in api/.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { TrainingEngine } from '../types.ts';
import { TinkerSamplers } from './server-sampling.ts';
import { FutureStore, DuplicateConflict, UserError } from './futures.ts';
import { encodeForwardBackwardOutput, encodeSampleResponse } from './proto.ts';
import {
  SDK_VERSION, WireError, fromWireDatum, lossFromWire, parseTinkerPath,
  type ForwardBackwardInput, type ForwardBackwardResult, type SampleResult,
} from './wire.ts';
import { CheckpointStore, CheckpointError, type CheckpointKind } from './checkpoints.ts';
import { SessionRegistry } from './sessions.ts';
import { HttpError, datumLoss, jsonFwdBwd, decodeProtoFwdBwd, intField, optionalInt, parseJson, readBody, send } from './server-http.ts';

export interface TinkerServerOptions {
  engine: TrainingEngine;
  /** the base model name clients ask for (get_server_capabilities lists it) */
  modelName: string;
  /** checkpoints live under here (tinker://… URIs map to folders) */
  dataDir: string;
  host?: string;
  port?: number;
  /** when set, every route but healthz needs it (X-API-Key, or Authorization: Bearer) */
  apiKey?: string;
  maxBodyBytes?: number;
  longPollMs?: number;
  /** sampler snapshots kept in memory besides the newest (older ones are freed when idle) */
  keepSamplerVersions?: number;
  /** a session without any call naming it for this long ends, with its samplers and training client (default 10 minutes) */
  sessionIdleMs?: number;
  log?: (line: string) => void;
}

export interface RunningTinkerServer { url: string; server: Server; close(): Promise<void> }


interface TrainingModel { id: string; sessionId: string; rank: number }

const PROTO = 'application/x-protobuf';

/** The client/config answer: JSON bodies accepted everywhere, protobuf where negotiated, no zstd, no JWT. */
const CLIENT_CONFIG = {
  pjwt_auth_enabled: false, credential_default_source: 'api_key', parallel_fwdbwd_chunks: true, proto_write_fwdbwd: true,
  proto_compress_fwdbwd: false, fwd_via_fwdbwd: false, fwdbwd_max_chunk_len: 1024, fwdbwd_max_chunk_bytes_count: 5_000_000,
  sample_max_concurrent_requests: 2000, sample_no_retries: false, create_model_via_load_weights: false, sample_use_retrieve_futures: false,
  // this server's extensions (the SDK ignores unknown fields): lora_config.alpha, loss_fn_config.temperature,
  // asample.prompt_logprobs_temperature; clients send them only when they see this flag
  openclaw_rl_extensions: 1,
};

export class TinkerServer {
  private readonly o: Required<Omit<TinkerServerOptions, 'apiKey' | 'host' | 'port' | 'log'>> & TinkerServerOptions;
  private readonly futures: FutureStore;
  private readonly sessions: SessionRegistry;
  private expiryTimer: NodeJS.Timeout | null = null;
  private readonly samplers: TinkerSamplers;
  private readonly savedVersions: number[] = [];
  private model: TrainingModel | null = null;
  private readonly log: (line: string) => void;
  private readonly store: CheckpointStore;

  constructor(o: TinkerServerOptions) {
    this.o = { maxBodyBytes: 64 * 2 ** 20, longPollMs: 25_000, keepSamplerVersions: 4, sessionIdleMs: 10 * 60_000, ...o, dataDir: resolve(o.dataDir) };
    this.futures = new FutureStore({ longPollMs: this.o.longPollMs });
    this.log = o.log ?? (() => {});
    this.store = new CheckpointStore({ dataDir: this.o.dataDir, modelName: o.modelName, current: () => this.model });
    this.sessions = new SessionRegistry({ file: join(this.o.dataDir, 'sessions.json'), idleMs: this.o.sessionIdleMs, log: this.log });
    this.samplers = new TinkerSamplers({
      engine: this.o.engine, modelName: o.modelName, store: this.store, sessions: this.sessions, futures: this.futures,
      session: (id) => this.session(id),
    });
  }

  // ---- HTTP ----

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/\/+$/, '');
    try {
      if (path === '/api/v1/healthz' && req.method === 'GET') return send(res, 200, { status: 'ok' });
      const signed = /^\/api\/v1\/checkpoint_archives\/([A-Za-z0-9_.-]+)$/.exec(path);
      if (signed && req.method === 'GET') {
        const { tar, filename } = this.store.archive(signed[1]);
        res.writeHead(200, { 'content-type': 'application/x-tar', 'content-length': tar.length, 'content-disposition': `attachment; filename="${filename}"` });
        res.end(tar);
        return;
      }
      if (this.o.apiKey && !this.authorised(req)) throw new HttpError(401, 'a valid API key is required (X-API-Key header)');
      const raw = req.method === 'POST' ? await readBody(req, this.o.maxBodyBytes) : Buffer.alloc(0);
      const isProto = (req.headers['content-type'] ?? '').includes(PROTO);
      if (req.headers['content-encoding'] && req.headers['content-encoding'] !== 'identity') throw new HttpError(415, `content-encoding ${req.headers['content-encoding']} is not supported (the client config says proto_compress_fwdbwd: false)`);
      const body = isProto ? raw : parseJson(raw);
      const accept = String(req.headers.accept ?? '');
      if (req.method === 'GET') {
        if (path === '/api/v1/get_server_capabilities') return send(res, 200, { supported_models: [{ model_name: this.o.modelName, max_context_length: this.o.engine.info.contextLength }] });
        const m = /^\/api\/v1\/samplers\/([^/]+)$/.exec(path);
        if (m) return send(res, 200, await this.samplers.samplerInfo(decodeURIComponent(m[1])));
        if (path === '/api/v1/training_runs') return send(res, 200, this.store.trainingRuns(url.searchParams));
        const run = /^\/api\/v1\/training_runs\/([^/]+)(\/checkpoints)?$/.exec(path);
        if (run) {
          const id = decodeURIComponent(run[1]);
          return send(res, 200, run[2] ? { checkpoints: this.store.checkpoints(id) } : this.store.trainingRun(id));
        }
        const archive = /^\/api\/v1\/training_runs\/([^/]+)\/checkpoints\/(weights|sampler_weights)\/([^/]+)\/archive$/.exec(path);
        if (archive) {
          // a signed URL, as Tinker cloud answers (the client fetches it without its API key)
          const a = this.store.archiveUrl(decodeURIComponent(archive[1]), archive[2] as CheckpointKind, decodeURIComponent(archive[3]));
          const host = req.headers.host ?? `${this.o.host ?? '127.0.0.1'}:${this.o.port ?? 8000}`;
          res.writeHead(302, { location: `http://${host}${a.path}`, expires: a.expires.toUTCString(), 'content-length': 0 });
          res.end();
          return;
        }
        throw new HttpError(404, `no route GET ${path}`);
      }
      if (req.method !== 'POST') throw new HttpError(405, `method ${req.method} is not allowed`);
      const b = body as Record<string, unknown>;
      const idem = typeof req.headers['x-idempotency-key'] === 'string' ? req.headers['x-idempotency-key'] : undefined;
      switch (path) {
        case '/api/v1/client/config': return send(res, 200, CLIENT_CONFIG);
        case '/api/v1/client/dynamic_config': return send(res, 200, { refresh_interval_sec: 300 });
        case '/api/v1/telemetry': return send(res, 200, { status: 'accepted' });
        case '/api/v1/create_session': return send(res, 200, this.createSession(b));
        case '/api/v1/session_heartbeat': return send(res, 200, this.heartbeat(b));
        case '/api/v1/create_model': return send(res, 200, this.createModel(b, idem));
        case '/api/v1/get_info': return send(res, 200, this.getInfo(b));
        case '/api/v1/unload_model': return send(res, 200, this.unloadModel(b));
        case '/api/v1/forward_backward': return send(res, 200, this.forwardBackward(isProto ? decodeProtoFwdBwd(raw) : jsonFwdBwd(b, 'forward_backward_input', false)));
        case '/api/v1/forward': return send(res, 200, this.forwardBackward(jsonFwdBwd(b, 'forward_input', true)));
        case '/api/v1/optim_step': return send(res, 200, this.optimStep(b));
        case '/api/v1/save_weights': return send(res, 200, this.saveWeights(b));
        case '/api/v1/load_weights': return send(res, 200, this.loadWeights(b));
        case '/api/v1/save_weights_for_sampler': return send(res, 200, this.saveForSampler(b));
        case '/api/v1/create_sampling_session': return send(res, 200, await this.samplers.createSamplingSession(b));
        case '/api/v1/asample': return send(res, 200, await this.samplers.asample(b));
        case '/api/v1/weights_info': return send(res, 200, this.weightsInfo(b));
        case '/api/v1/retrieve_future': return await this.retrieve(b, accept, req, res);
        default: throw new HttpError(404, `no route POST ${path}`);
      }
    } catch (e) {
      const status = e instanceof HttpError || e instanceof CheckpointError ? e.status : e instanceof DuplicateConflict ? 409
        : e instanceof WireError || e instanceof UserError || (e as { code?: string }).code === 'bad_request' ? 400 : 500;
      if (status === 500) this.log(`tinker server: ${(e as Error).stack ?? e}`);
      if (!res.headersSent) send(res, status, { detail: status === 500 ? 'internal error' : (e as Error).message });
      else res.end();
    }
  }

  private authorised(req: IncomingMessage): boolean {
    const key = typeof req.headers['x-api-key'] === 'string' ? req.headers['x-api-key'] : /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (!key) return false;
    const h = (s: string) => createHash('sha256').update(s).digest();
    return timingSafeEqual(h(key), h(this.o.apiKey!));
  }

  // ---- sessions and models ----

  private createSession(b: Record<string, unknown>): object {
    const { id } = this.sessions.create(typeof b.sdk_version === 'string' ? b.sdk_version : null);
    return { type: 'create_session', session_id: id, info_message: null, warning_message: null, error_message: null };
  }

  private session(id: unknown): string {
    if (typeof id === 'string' && this.sessions.touch(id)) return id;
    const why = typeof id === 'string' && this.sessions.endedByIdle(id)
      ? `it ended after ${Math.round(this.o.sessionIdleMs / 1000)} s without a heartbeat` : 'it was never created here';
    throw new HttpError(404, `unknown session_id '${String(id)}' (${why}): create a new session`);
  }

  /** End idle sessions: their samplers go, and their training client if it is the one being trained. */
  private expireSessions(): void {
    for (const id of this.sessions.expire()) {
      this.samplers.endSession(id);
      if (this.model?.sessionId === id) { this.log(`tinker server: training client ${this.model.id} ended with its idle session`); this.model = null; }
      this.log(`tinker server: session ${id} ended (idle for ${Math.round(this.o.sessionIdleMs / 1000)} s)`);
    }
  }

  private heartbeat(b: Record<string, unknown>): object {
    this.session(b.session_id);
    return { type: 'session_heartbeat' };
  }

  private createModel(b: Record<string, unknown>, idem: string | undefined): object {
    const sessionId = this.session(b.session_id);
    const seq = intField(b, 'model_seq_id', 0);
    if (b.base_model !== undefined && b.base_model !== this.o.modelName) throw new HttpError(400, `base_model '${String(b.base_model)}' is not served here (this server trains '${this.o.modelName}')`);
    const lora = (b.lora_config ?? {}) as Record<string, unknown>;
    const rank = intField(lora, 'rank', 32);
    if (rank < 1 || rank > 1024) throw new HttpError(400, `lora_config.rank must be between 1 and 1024 (got ${rank})`);
    const seed = lora.seed === undefined || lora.seed === null ? undefined : intField(lora, 'seed', 0);
    const alpha = lora.alpha === undefined || lora.alpha === null ? undefined : Number(lora.alpha);
    if (alpha !== undefined && !(alpha > 0)) throw new HttpError(400, 'lora_config.alpha must be a positive number');
    const modelId = `${sessionId}:train:${seq}`;
    const requestId = this.futures.submit('create_model', async () => {
      await this.o.engine.configureTraining({ rank, ...(seed !== undefined ? { seed } : {}), ...(alpha !== undefined ? { alpha } : {}) });
      // one training client at a time: a new one replaces the previous (single-tenant, like SkyRL's FSDP backend)
      if (this.model && this.model.id !== modelId) this.log(`tinker server: model ${this.model.id} replaced by ${modelId}`);
      this.model = { id: modelId, sessionId, rank };
      return { model_id: modelId, type: 'create_model' };
    }, { dedupeKey: idem ? `create_model:${idem}` : `create_model:${modelId}`, payload: { rank, seed, alpha } });
    return { request_id: requestId, model_id: modelId };
  }

  private requireModel(id: unknown): TrainingModel {
    if (typeof id !== 'string' || !id) throw new HttpError(400, 'model_id is required');
    if (!this.model || this.model.id !== id) throw new HttpError(404, `unknown model_id '${id}'${this.model ? ` (this server now trains '${this.model.id}')` : ''}`);
    return this.model;
  }

  private getInfo(b: Record<string, unknown>): object {
    const m = this.requireModel(b.model_id);
    return {
      type: 'get_info', model_id: m.id, is_lora: true, lora_rank: m.rank, model_name: this.o.modelName,
      model_data: { arch: this.o.engine.info.modelType, model_name: this.o.modelName, tokenizer_id: this.o.modelName },
    };
  }

  private unloadModel(b: Record<string, unknown>): object {
    const m = this.requireModel(b.model_id);
    const requestId = this.futures.submit('unload_model', async () => {
      if (this.model?.id === m.id) this.model = null;
      return { model_id: m.id, type: 'unload_model' };
    });
    return { request_id: requestId, model_id: m.id };
  }

  // ---- training ----

  private ordered(kind: Parameters<FutureStore['submit']>[0], model: TrainingModel, seq: number | undefined, payload: unknown, run: () => Promise<unknown>): object {
    const requestId = this.futures.submit(kind, async () => {
      if (this.model?.id !== model.id) throw new UserError(`model ${model.id} was unloaded or replaced`);
      return run();
    }, seq !== undefined ? { order: { owner: model.id, seq }, dedupeKey: `${model.id}#${seq}`, payload } : {});
    return { request_id: requestId, model_id: model.id };
  }

  private forwardBackward(r: { model_id: unknown; seq_id?: number; forward_only: boolean; input: ForwardBackwardInput }): object {
    const model = this.requireModel(r.model_id);
    if (!r.input || !Array.isArray(r.input.data) || r.input.data.length === 0) throw new HttpError(400, 'forward_backward needs at least one datum in data');
    const loss = lossFromWire(String(r.input.loss_fn), r.input.loss_fn_config ?? {});
    const data = r.input.data.map((d) => fromWireDatum(d, loss));
    const vocab = this.o.engine.info.vocabSize;
    for (const d of data) for (const id of [...d.promptIds, ...d.responseIds]) if (id < 0 || id >= vocab) throw new HttpError(400, `token id ${id} is outside the vocabulary (0..${vocab - 1})`);
    return this.ordered('forward_backward', model, r.seq_id, r.input, async (): Promise<ForwardBackwardResult> => {
      let logprobs: number[][], lossSum: number;
      if (r.forward_only) {
        const scored = await this.o.engine.score(data.map((d) => ({ promptIds: d.promptIds, responseIds: d.responseIds })), { adapter: 'current', temperature: loss.spec.temperature ?? 1 });
        logprobs = scored.map((a) => Array.from(a));
        lossSum = data.reduce((acc, d, i) => acc + datumLoss(d, logprobs[i], loss.spec), 0);
      } else {
        const fb = await this.o.engine.forwardBackward(data, loss.spec);
        logprobs = fb.logprobs;
        lossSum = fb.loss * fb.tokens;
      }
      return {
        loss_fn_output_type: 'ArrayRecord',
        loss_fn_outputs: logprobs.map((lp) => ({ logprobs: { data: lp, dtype: 'float32', shape: [lp.length] } })),
        metrics: { 'loss:sum': lossSum },
      };
    });
  }

  private optimStep(b: Record<string, unknown>): object {
    const model = this.requireModel(b.model_id);
    const a = (b.adam_params ?? {}) as Record<string, unknown>;
    const num = (k: string, d: number, ok: (x: number) => boolean) => {
      const v = a[k] === undefined ? d : a[k];
      if (typeof v !== 'number' || !ok(v)) throw new HttpError(400, `adam_params.${k} is invalid (got ${JSON.stringify(a[k])})`);
      return v;
    };
    const adam = {
      learningRate: num('learning_rate', 1e-4, (x) => x >= 0), beta1: num('beta1', 0.9, (x) => x >= 0 && x < 1), beta2: num('beta2', 0.95, (x) => x >= 0 && x < 1),
      eps: num('eps', 1e-12, (x) => x > 0), weightDecay: num('weight_decay', 0, (x) => x >= 0), gradClipNorm: num('grad_clip_norm', 0, (x) => x >= 0),
      normalize: 'none' as const,
    };
    return this.ordered('optim_step', model, optionalInt(b, 'seq_id'), adam, async () => {
      const m = await this.o.engine.optimStep(adam);
      if (m.skipped) throw new UserError(`the optimizer step was refused: ${m.reason}`);
      return { type: 'optim_step', metrics: { 'grad_norm:mean': m.gradNorm, 'step:max': m.step } };
    });
  }

  private saveWeights(b: Record<string, unknown>): object {
    const model = this.requireModel(b.model_id);
    const name = String(b.path ?? '');
    const dir = this.store.dir(model.id, 'weights', name);
    return this.ordered('save_weights', model, optionalInt(b, 'seq_id'), { name }, async () => {
      if (existsSync(dir) && b.overwrite !== true) throw new UserError(`checkpoint '${name}' already exists (pass overwrite: true to replace it)`);
      mkdirSync(dirname(dir), { recursive: true });
      await this.o.engine.saveTrainingState(dir);
      return { path: `tinker://${model.id}/weights/${name}`, type: 'save_weights' };
    });
  }

  private loadWeights(b: Record<string, unknown>): object {
    const model = this.requireModel(b.model_id);
    const path = String(b.path ?? '');
    const p = parseTinkerPath(path);
    if (p.kind !== 'weights') throw new HttpError(400, `load_weights needs a training checkpoint (tinker://…/weights/NAME), got '${path}'`);
    const dir = this.store.dir(p.runId, 'weights', p.name);
    if (!existsSync(dir)) throw new HttpError(404, `checkpoint '${path}' does not exist on this server`);
    return this.ordered('load_weights', model, optionalInt(b, 'seq_id'), { path }, async () => {
      // the saved optimizer moments are restored too (optimizer: false is not distinguished)
      const v = await this.o.engine.loadTrainingState(dir);
      this.retain(v);
      return { path, model_id: model.id, type: 'load_weights' };
    });
  }

  /** Keep the newest sampler snapshots; older ones are freed once no request uses them. */
  private retain(version: number): void {
    this.savedVersions.push(version);
    const keep = this.savedVersions.slice(-this.o.keepSamplerVersions);
    this.savedVersions.splice(0, this.savedVersions.length - keep.length);
    // publishing marks what may be freed: versions below the published one, when idle (samplers here pin versions explicitly)
    void this.o.engine.publish(keep[0]).catch((e) => this.log(`tinker server: could not release old versions: ${(e as Error).message}`));
  }

  private saveForSampler(b: Record<string, unknown>): object {
    const model = this.requireModel(b.model_id);
    const name = b.path === undefined || b.path === null ? null : String(b.path);
    const dir = name === null ? null : this.store.dir(model.id, 'sampler_weights', name);
    const seqForSampler = name === null ? intField(b, 'sampling_session_seq_id', 0) : null;
    return this.ordered('save_weights_for_sampler', model, optionalInt(b, 'seq_id'), { name, seqForSampler }, async () => {
      const v = await this.o.engine.saveWeights();
      this.retain(v);
      if (dir) {
        mkdirSync(dirname(dir), { recursive: true });
        await this.o.engine.saveAdapter(dir, v);
        const path = `tinker://${model.id}/sampler_weights/${name}`;
        this.samplers.rememberCheckpoint(path, v);
        return { path, type: 'save_weights_for_sampler' };
      }
      const id = `${model.sessionId}:sample:${seqForSampler}`;
      this.samplers.addSnapshot(id, v);
      return { path: null, sampling_session_id: id, type: 'save_weights_for_sampler' };
    });
  }

  private weightsInfo(b: Record<string, unknown>): object {
    const p = parseTinkerPath(String(b.tinker_path ?? ''));
    const dir = this.store.dir(p.runId, p.kind ?? 'sampler_weights', p.name);
    if (!existsSync(dir)) throw new HttpError(404, `checkpoint '${String(b.tinker_path)}' does not exist on this server`);
    return { base_model: this.o.modelName, is_lora: true, lora_rank: this.model?.id === p.runId ? this.model.rank : null };
  }

  // ---- futures ----

  private async retrieve(b: Record<string, unknown>, accept: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const id = String(b.request_id ?? '');
    if (!this.futures.has(id)) throw new HttpError(404, `unknown request_id '${id}' (results are kept for 30 minutes, and not across restarts)`);
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const outcome = (await this.futures.wait(id, this.o.longPollMs, gone.signal))!;
    if (outcome.state === 'pending') return send(res, 200, { type: 'try_again', request_id: id, queue_state: 'active' });
    if (outcome.state === 'failed') return send(res, 200, { error: outcome.error, category: outcome.category });
    const kind = this.futures.kindOf(id);
    if (accept.includes(PROTO) && (kind === 'sample' || kind === 'forward_backward')) {
      const bytes = kind === 'sample' ? encodeSampleResponse(outcome.value as SampleResult) : encodeForwardBackwardOutput(outcome.value as ForwardBackwardResult);
      res.writeHead(200, { 'content-type': PROTO, 'content-length': bytes.length });
      res.end(bytes);
      return;
    }
    void req;
    send(res, 200, outcome.value);
  }

  listen(): Promise<RunningTinkerServer> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 60_000;
    return new Promise((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(this.o.port ?? 8000, this.o.host ?? '127.0.0.1', () => {
        const a = server.address() as AddressInfo;
        const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
        this.expiryTimer = setInterval(() => this.expireSessions(), Math.min(60_000, Math.max(1000, this.o.sessionIdleMs / 4)));
        this.expiryTimer.unref();
        resolveListen({
          url: `http://${host}:${a.port}`, server,
          close: () => new Promise<void>((r) => {
            if (this.expiryTimer) clearInterval(this.expiryTimer);
            this.sessions.close();
            server.close(() => r()); server.closeAllConnections();
          }),
        });
      });
    });
  }
}

export { SDK_VERSION };
