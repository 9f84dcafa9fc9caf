// The Tinker HTTP API's JSON shapes (as SDK 0.25 sends and expects them) and the conversions between
// them and this project's training types. Both halves of the protocol use this file: the client
// engine (engine.ts) and the server in front of the embedded engine (server.ts).
//
// Alignment (Tinker's): a full sequence s is sent as model_input = s[:-1]; every per-token loss
// input has the same length N, position i scoring token s[i+1]. Our Datum is prompt ids + response
// ids, so response token t sits at position (prompt length − 1 + t); prompt positions carry zeros.
import type { Datum, AdamParams } from '../types.ts';
import { ADAM_DEFAULTS } from '../types.ts';
import type { LossSpec } from '../../learn/losses.ts';

/** The SDK version whose wire behaviour this implementation follows (sent in the handshake). */
export const SDK_VERSION = '0.25.0';

export type WireChunk = { type: 'encoded_text'; tokens: number[] } | { type: 'image' | 'image_asset_pointer' | 'dmel'; [k: string]: unknown };
export interface ModelInput { chunks: WireChunk[] }
export interface WireTensor { data: number[]; dtype: 'int64' | 'float32'; shape?: number[] }
export interface WireDatum { model_input: ModelInput; loss_fn_inputs: Record<string, WireTensor> }
export interface ForwardBackwardInput { loss_fn: string; loss_fn_config?: Record<string, number>; data: WireDatum[] }

export interface ForwardBackwardResult {
  loss_fn_output_type: string;
  /** one entry per datum (e.g. {logprobs: learner log-prob of every target token}) */
  loss_fn_outputs: Record<string, WireTensor>[];
  /** keys are `name:reduction` (the SDK merges chunk results by the reduction) */
  metrics: Record<string, number>;
}

export interface WireSamplingParams {
  max_tokens?: number;
  seed?: number;
  /** stop strings, or stop token ids (never mixed) */
  stop?: string | string[] | number[];
  temperature?: number;
  /** −1 = off */
  top_k?: number;
  top_p?: number;
}

export interface SampledSequence { stop_reason: 'stop' | 'length'; tokens: number[]; logprobs?: number[]; sequence_id?: string }
export interface SampleResult {
  type: 'sample';
  sequences: SampledSequence[];
  /** first position has no log-prob (null) */
  prompt_logprobs?: (number | null)[] | null;
  topk_prompt_logprobs?: ([number, number][] | null)[] | null;
  prompt_cache_hit_tokens?: number;
}

export interface WireAdamParams { learning_rate: number; beta1: number; beta2: number; eps: number; weight_decay: number; grad_clip_norm: number }

/** A future's submit answer. */
export interface UntypedFuture { request_id: string; model_id?: string; sample_sequence_ids?: string[] }

/** Tinker's loss names this code knows (the server implements the first three). */
export const LOSS_FNS = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'] as const;

export function tokensOf(input: ModelInput): number[] {
  const out: number[] = [];
  for (const c of input.chunks) {
    if (c.type !== 'encoded_text') throw new WireError(`model_input chunks of type '${c.type}' are not supported (text only)`);
    for (const t of (c as { tokens: unknown }).tokens as unknown[]) {
      if (!Number.isInteger(t)) throw new WireError('encoded_text tokens must be integers');
      out.push(t as number);
    }
  }
  return out;
}

/** A request the wire cannot express or a server cannot accept: a user error, never a crash. */
export class WireError extends Error { override name = 'WireError'; }

// ---- client side: our Datum → Tinker datum ----

/**
 * `scale` multiplies advantages (ppo, importance_sampling) or weights (cross_entropy): Tinker's
 * losses are sums, so scaling by 1/(loss tokens of the optimizer step) gives this project's
 * token-mean. The loss mask is folded in the same way (a masked token has advantage/weight 0).
 */
export function toWireDatum(d: Datum, loss: LossSpec, scale: number): WireDatum {
  const full = [...d.promptIds, ...d.responseIds];
  const N = full.length - 1, P = d.promptIds.length, R = d.responseIds.length;
  const perToken = (values: (t: number) => number): WireTensor => {
    const data = new Array<number>(N).fill(0);
    for (let t = 0; t < R; t++) data[P - 1 + t] = values(t);
    return { data, dtype: 'float32', shape: [N] };
  };
  const mask = (t: number) => d.lossMask?.[t] ?? 1;
  const inputs: Record<string, WireTensor> = { target_tokens: { data: full.slice(1), dtype: 'int64', shape: [N] } };
  if (loss.kind === 'cross_entropy') inputs.weights = perToken((t) => mask(t) * scale);
  else {
    if (!d.advantages || !d.behaviourLogprobs) throw new WireError('the ppo loss needs advantages and behaviour log-probs for every response token');
    inputs.logprobs = perToken((t) => d.behaviourLogprobs![t]);
    inputs.advantages = perToken((t) => d.advantages![t] * mask(t) * scale);
  }
  return { model_input: { chunks: [{ type: 'encoded_text', tokens: full.slice(0, N) }] }, loss_fn_inputs: inputs };
}

/** Tinker's PPO clip bounds are absolute ratios (0.8, 1.2); ours are distances from 1 (0.2, 0.28). */
export function wireLossConfig(loss: LossSpec, temperature: number): { loss_fn: string; loss_fn_config?: Record<string, number> } {
  const config: Record<string, number> = {};
  if (loss.kind === 'ppo') {
    config.clip_low_threshold = 1 - (loss.clipLow ?? 0.2);
    config.clip_high_threshold = 1 + (loss.clipHigh ?? 0.28);
  }
  // an extension of this project's server: log-probs of softmax(logits / T); sent only when T ≠ 1
  if (temperature !== 1) config.temperature = temperature;
  return { loss_fn: loss.kind, ...(Object.keys(config).length ? { loss_fn_config: config } : {}) };
}

export function toWireAdam(p: AdamParams): WireAdamParams {
  const a = { ...ADAM_DEFAULTS, ...p };
  return { learning_rate: a.learningRate, beta1: a.beta1, beta2: a.beta2, eps: a.eps, weight_decay: a.weightDecay, grad_clip_norm: a.gradClipNorm };
}

// ---- server side: Tinker datum → our Datum ----

export interface ServerLoss { spec: LossSpec; kind: 'cross_entropy' | 'importance_sampling' | 'ppo' }

export function lossFromWire(lossFn: string, config: Record<string, number> = {}): ServerLoss {
  const known = new Set(['clip_low_threshold', 'clip_high_threshold', 'temperature']);
  for (const k of Object.keys(config)) if (!known.has(k)) throw new WireError(`unknown loss_fn_config key '${k}' (known: ${[...known].join(', ')})`);
  const temperature = config.temperature ?? 1;
  if (!(temperature > 0)) throw new WireError('loss_fn_config.temperature must be positive');
  if (lossFn === 'cross_entropy') return { kind: 'cross_entropy', spec: { kind: 'cross_entropy', temperature } };
  if (lossFn === 'importance_sampling') {
    // −Σ r·A is PPO with the ratio never clipped
    return { kind: 'importance_sampling', spec: { kind: 'ppo', clipLow: 1, clipHigh: Number.MAX_VALUE, temperature } };
  }
  if (lossFn === 'ppo') {
    const lo = config.clip_low_threshold ?? 0.8, hi = config.clip_high_threshold ?? 1.2;
    if (!(lo >= 0 && lo <= 1 && hi >= 1)) throw new WireError(`ppo clip thresholds must satisfy 0 ≤ low ≤ 1 ≤ high (got ${lo}, ${hi})`);
    return { kind: 'ppo', spec: { kind: 'ppo', clipLow: 1 - lo, clipHigh: hi - 1, temperature } };
  }
  throw new WireError(`loss_fn '${lossFn}' is not supported by this server (supported: cross_entropy, importance_sampling, ppo)`);
}

function tensorValues(d: WireDatum, name: string, n: number, required: boolean): number[] | null {
  const t = d.loss_fn_inputs?.[name];
  if (!t) { if (required) throw new WireError(`loss_fn_inputs.${name} is required`); return null; }
  if (!Array.isArray(t.data) || t.data.some((x) => typeof x !== 'number' || !Number.isFinite(x))) throw new WireError(`loss_fn_inputs.${name}.data must be a list of finite numbers`);
  if (t.data.length !== n) throw new WireError(`loss_fn_inputs.${name} has ${t.data.length} values for ${n} input tokens`);
  return t.data;
}

/**
 * The whole sequence becomes the response after its first token, so every position is scored
 * (Tinker returns the learner's log-prob at every position). Positions with zero weight or zero
 * advantage are masked: their gradient is zero under these losses anyway.
 */
export function fromWireDatum(d: WireDatum, loss: ServerLoss): Datum {
  if (!d || typeof d !== 'object' || !d.model_input || !Array.isArray(d.model_input.chunks)) throw new WireError('a datum needs model_input.chunks');
  const tokens = tokensOf(d.model_input);
  const N = tokens.length;
  if (N === 0) throw new WireError('a datum needs at least one input token');
  const targets = tensorValues(d, 'target_tokens', N, true)!;
  for (let i = 0; i + 1 < N; i++) {
    if (targets[i] !== tokens[i + 1]) throw new WireError(`target_tokens[${i}] is ${targets[i]} but the next input token is ${tokens[i + 1]}: this server trains next-token targets only`);
  }
  if (!targets.every((t) => Number.isInteger(t))) throw new WireError('target_tokens must be integers');
  const datum: Datum = { promptIds: [tokens[0]], responseIds: targets };
  if (loss.kind === 'cross_entropy') {
    datum.lossMask = tensorValues(d, 'weights', N, false) ?? new Array<number>(N).fill(1);
  } else {
    datum.behaviourLogprobs = tensorValues(d, 'logprobs', N, true)!;
    datum.advantages = tensorValues(d, 'advantages', N, true)!;
    datum.lossMask = datum.advantages.map((a) => (a !== 0 ? 1 : 0));
  }
  return datum;
}

// ---- checkpoint URIs ----

/** tinker://{training_run_id}/{weights|sampler_weights}/{name}; SkyRL omits the middle segment. */
export function parseTinkerPath(path: string): { runId: string; kind: 'weights' | 'sampler_weights' | null; name: string } {
  const m = /^tinker:\/\/([^/]+)\/(?:(weights|sampler_weights)\/)?([^/]+)$/.exec(path);
  if (!m) throw new WireError(`not a tinker:// checkpoint path: '${path}'`);
  return { runId: m[1], kind: (m[2] as 'weights' | 'sampler_weights' | undefined) ?? null, name: m[3] };
}

export const CHECKPOINT_NAME = /^[A-Za-z0-9_.-]{1,255}$/;
