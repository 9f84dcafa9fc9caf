// The Engine interface: what the server, judge and trainer need from a model, whether it runs
// in-process (embedded) or elsewhere. Shaped after the Tinker primitives so remote GPU engines fit.
import type { LossSpec } from '../learn/losses.ts';

// ---- chat messages and the tokenizer ----

export interface ToolCall { id?: string; type?: 'function'; function: { name: string; arguments: string | Record<string, unknown> } }
export type ContentPart = { type: string; text?: string; [k: string]: unknown };
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  reasoning_content?: string | null;
}
export interface ToolSpec { type: 'function'; function: { name: string; description?: string; parameters?: unknown } }

export interface RenderOptions {
  tools?: ToolSpec[];
  addGenerationPrompt?: boolean;
  /** extra template variables, e.g. {enable_thinking: false} (OpenAI's chat_template_kwargs) */
  templateKwargs?: Record<string, unknown>;
}

/**
 * The model's tokenizer and chat template, as code outside an engine uses them. Remote engines
 * (Tinker, vLLM, SGLang) render and tokenize on this side too, so prompt ids are always ours.
 */
export interface Tokenizer {
  /** the Jinja chat template, or null for base models (plain-text fallback) */
  readonly chatTemplate: string | null;
  readonly vocabSize: number;
  encode(text: string, addSpecialTokens?: boolean): number[];
  decode(ids: ArrayLike<number>, skipSpecialTokens?: boolean): string;
  /** one token's text piece as the vocabulary spells it */
  tokenText(id: number): string;
  /** the prompt text exactly as apply_chat_template(..., tokenize=False) renders it */
  renderChat(messages: ChatMessage[], opts?: RenderOptions): string;
  /** prompt token ids for a conversation */
  encodeChat(messages: ChatMessage[], opts?: RenderOptions): number[];
}

export type FinishReason = 'stop' | 'length' | 'abort';

export interface SampleParams {
  maxTokens: number;
  /** 0 = greedy */
  temperature: number;
  topP: number;
  /** 0 = off */
  topK: number;
  /** same seed + same prompt + same params → same tokens */
  seed?: number;
  /** extra ids that end generation (the model's EOS ids always do, unless ignoreEos) */
  stopTokenIds?: number[];
  stop?: string[];
  ignoreEos?: boolean;
  /** also return this many most likely alternatives per token (0 = none) */
  topLogprobs?: number;
  /**
   * 'base' samples with adapters off (judges); a number samples with that saved version (a Tinker
   * sampling client pins one); default: the published weights
   */
  weights?: 'published' | 'base' | number;
  /** 'low' is admitted only when no normal request waits, one at a time (judging, evaluation) */
  priority?: 'normal' | 'low';
  /** a shape the output must keep to (constrained decoding); log-probs are those of the masked distribution */
  constraint?: OutputConstraint;
}

/**
 * A shape the output must keep to, enforced token by token: the engine masks every token that would leave
 * it. 'tool_call': exactly `<open>{"name": "<one of names>", "arguments": {…valid JSON…}}<close>`, then
 * end of sequence (tool_choice "required" or a named function); 'forbid': the output never contains `text`
 * (tool_choice "none"). Engines that cannot enforce one refuse the request with EngineError 'unsupported'.
 */
export type OutputConstraint =
  | { type: 'tool_call'; names: string[]; open: string; close: string }
  | { type: 'forbid'; text: string };

export const DEFAULT_SAMPLE_PARAMS: SampleParams = { maxTokens: 256, temperature: 1, topP: 1, topK: 0 };

export interface SampledToken {
  id: number;
  /** log-probability under the distribution it was sampled from: see engine/embedded/sampler.ts */
  logprob: number;
  /** text this token added to the output (may be '' while a character or stop string is incomplete) */
  text: string;
  /** the most likely tokens at this position, under the same distribution as `logprob` */
  top?: { id: number; logprob: number }[];
}

export interface SampleResult {
  /** generated ids only (the EOS/stop id that ended generation included) */
  ids: number[];
  logprobs: number[];
  text: string;
  finishReason: FinishReason;
  /** what stopped it: the stop token id or stop string */
  stoppedBy?: number | string;
  promptTokens: number;
  policyVersion: number;
}

export type SampleEvent = { type: 'token'; token: SampledToken } | { type: 'done'; result: SampleResult };

export interface ScoreRequest { promptIds: number[]; responseIds: number[] }
/** A scoring request that also asks, per response token, for the log-probs of these vocabulary ids. */
export interface TopKScoreRequest extends ScoreRequest { gatherIds?: number[][] }
/** Teacher-forced log-probs of a response, with each position's K most likely tokens (most likely first). */
export interface TopKScore {
  logprobs: Float32Array;
  /** per response token: the K most likely ids and their log-probs, as sampling's top_logprobs reports them */
  topIds: number[][];
  topLogprobs: number[][];
  /** per response token: the log-probs of the request's gatherIds (null when none were asked) */
  gathered: number[][] | null;
}
/**
 * Which weights score: 'published' (what new requests are served with, the default), 'current'
 * (the adapter being trained), 'base' (adapters off), or a saved version number.
 */
export type AdapterSelector = 'published' | 'current' | 'base' | number;
export interface ScoreOptions {
  /** scale logits by 1/T before the log-softmax (default 1) */
  temperature?: number;
  adapter?: AdapterSelector;
}

export interface EngineInfo {
  modelId: string;
  modelType: string;
  contextLength: number;
  vocabSize: number;
  eosTokenIds: number[];
  kernel: string;
  threads: number;
  weightBytes: number;
  sourceDtypes: string[];
}

export interface Engine {
  readonly info: EngineInfo;
  readonly tokenizer: Tokenizer;
  /** Streams tokens as they are produced; the last event is `done`. Aborting ends it with finishReason 'abort'. */
  sample(promptIds: number[], params: SampleParams, signal?: AbortSignal): AsyncIterable<SampleEvent>;
  /** Teacher-forced log-probs of each response's tokens after its prompt. */
  score(requests: ScoreRequest[], opts?: ScoreOptions): Promise<Float32Array[]>;
  /**
   * `score` plus each position's top-K (ids and log-probs under the same distribution as sampling's
   * top_logprobs) and the log-probs of ids asked for per position: what top-K distillation needs.
   * Optional: engines without it cannot run top-K OPD (the trainer says so).
   */
  scoreTopK?(requests: TopKScoreRequest[], k: number, opts?: ScoreOptions): Promise<TopKScore[]>;
  close(): Promise<void>;
}

export class EngineError extends Error {
  override name = 'EngineError';
  readonly code: 'bad_request' | 'context_length_exceeded' | 'closed' | 'internal';
  constructor(code: EngineError['code'], message: string) { super(message); this.code = code; }
}

/** Refuse ids outside the vocabulary (a bad request, whoever sent it). */
export function checkTokenIds(ids: ArrayLike<number>, vocabSize: number, label = 'token id'): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) throw new EngineError('bad_request', `${label} ${id} is outside the vocabulary (0..${vocabSize - 1})`);
  }
}

/** Drain a sample stream into its result. */
export async function collect(events: AsyncIterable<SampleEvent>): Promise<SampleResult> {
  for await (const ev of events) if (ev.type === 'done') return ev.result;
  throw new EngineError('internal', 'sample stream ended without a result');
}

// ---- training (LoRA) ----

/** One training sequence: the exact sampled ids with the log-probs they were sampled with. */
export interface Datum {
  promptIds: number[];
  responseIds: number[];
  /** per response token (ppo) */
  advantages?: number[];
  /** per response token: log-probs under the behaviour policy that sampled them (ppo) */
  behaviourLogprobs?: number[];
  /** per response token weight, usually 0/1 (default: all 1) */
  lossMask?: number[];
  /** per response token, optional: only reported (|teacher − behaviour|), the advantages carry it into the loss */
  teacherLogprobs?: number[];
  /** the temperature the response was sampled at (default: the loss spec's) */
  temperature?: number;
  /**
   * top-K distillation (ppo): per response token, a set of vocabulary ids with their log-probs under
   * the old policy and their advantages; the PPO surrogate of every entry is added to the token's loss
   * (learn/topk-opd.ts). The sampled token's own term still uses `advantages` (0 for OPD alone).
   */
  distill?: { ids: number[][]; oldLogprobs: number[][]; advantages: number[][] };
  /** the KL-to-base term's weight on this datum, a multiple of the loss spec's β (default 1; 0 = none) */
  klScale?: number;
  /**
   * per response token, optional (ppo): the weight of the unlikelihood term −log(1 − p) at the sampled token
   * (learn/losses.ts, unlikelihoodToken); 0 = none. The trainer puts it on the repeats of a looping answer.
   */
  unlikelihood?: number[];
}

export interface AdamParams {
  learningRate: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** clip the global gradient norm to this (0 = off) */
  gradClipNorm?: number;
  /**
   * 'tokens' (default): the step uses the accumulated gradient divided by its number of loss tokens
   * (token mean); 'none': the plain sum, as Tinker's losses define it (serve-tinker)
   */
  normalize?: 'tokens' | 'none';
}
export const ADAM_DEFAULTS = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, gradClipNorm: 1 };

export interface ForwardBackwardMetrics {
  /** mean loss per unmasked token of this call */
  loss: number;
  tokens: number;
  /** share of tokens whose PPO ratio was clipped (no gradient) */
  clipFraction: number;
  meanRatio: number;
  /** mean KL to the base model (only when the loss has a KL term): k3's estimate at the sampled tokens, or the exact sum over the vocabulary with the `full` estimator */
  kl: number | null;
  /** mean entropy excess over the base, max(0, H(π) − H(π_base)) per token (only with the entropy guard on) */
  entropyExcess?: number;
  /** mean |teacher − behaviour| over tokens that carry teacher log-probs */
  teacherBehaviourGap: number | null;
  /** learner log-probs of every response token, per datum */
  logprobs: number[][];
  /** norm of the gradient accumulated so far, as the next optimStep would see it */
  gradNorm: number;
  /** top-K distillation part of the loss, when data carried distill sets: mean set loss per token, tokens, share of clipped entries */
  distill?: { loss: number; tokens: number; clipFraction: number };
}

export interface OptimStepMetrics {
  step: number;
  gradNorm: number;
  /** the update was refused (non-finite gradients or loss): adapters unchanged */
  skipped: boolean;
  reason?: string;
  tokens: number;
  learningRate: number;
}

export interface LoraSettings { rank?: number; alpha?: number; targets?: string[]; seed?: number }

/** An engine that also trains LoRA adapters and publishes them as new weights versions. */
export interface TrainingEngine extends Engine {
  /** Start (or restart) training a fresh LoRA adapter, or with `null` every weight of the model (full-parameter). */
  configureTraining(lora?: LoraSettings | null): Promise<void>;
  /** Accumulates gradients (summed over tokens) until optimStep. */
  forwardBackward(data: Datum[], loss: LossSpec): Promise<ForwardBackwardMetrics>;
  optimStep(adam: AdamParams): Promise<OptimStepMetrics>;
  /**
   * Snapshot the trained adapter as a new version (not yet served). Its number is above every
   * earlier one and at least `atLeast` (a caller that keeps a durable version counter passes its
   * next number, so versions never repeat across restarts).
   */
  saveWeights(opts?: { atLeast?: number }): Promise<number>;
  /** Serve `version` to requests that start from now on; running ones finish on theirs. */
  publish(version: number): Promise<void>;
  saveAdapter(dir: string, adapter?: AdapterSelector): Promise<void>;
  /**
   * Write the selected weights (default: the published version) as a complete Hugging Face model
   * folder: config, float32 safetensors, tokenizer files with the chat template. A LoRA version is
   * merged into the base weights. Written atomically.
   */
  saveModel(dir: string, weights?: AdapterSelector): Promise<void>;
  /** Load a PEFT adapter folder as a new version. */
  loadAdapter(dir: string): Promise<number>;
  /** Checkpoint adapter + optimizer state, atomically; the checkpoint it replaces is kept at `${dir}.previous`. */
  saveTrainingState(dir: string): Promise<void>;
  loadTrainingState(dir: string): Promise<number>;
  versions(): Promise<{ published: number; live: number[]; optimizerStep: number | null }>;
}
