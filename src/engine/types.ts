// The Engine interface: what the server, judge and trainer need from a model, whether it runs
// in-process (embedded) or elsewhere. Shaped after the Tinker primitives so remote GPU engines fit.
import type { ChatTokenizer } from './embedded/tokenizer.ts';

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
}

export const DEFAULT_SAMPLE_PARAMS: SampleParams = { maxTokens: 256, temperature: 1, topP: 1, topK: 0 };

export interface SampledToken {
  id: number;
  /** log-probability under the distribution it was sampled from: see engine/embedded/sampler.ts */
  logprob: number;
  /** text this token added to the output (may be '' while a character or stop string is incomplete) */
  text: string;
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
export interface ScoreOptions { /** scale logits by 1/T before the log-softmax (default 1) */ temperature?: number }

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
  readonly tokenizer: ChatTokenizer;
  /** Streams tokens as they are produced; the last event is `done`. Aborting ends it with finishReason 'abort'. */
  sample(promptIds: number[], params: SampleParams, signal?: AbortSignal): AsyncIterable<SampleEvent>;
  /** Teacher-forced log-probs of each response's tokens after its prompt. */
  score(requests: ScoreRequest[], opts?: ScoreOptions): Promise<Float32Array[]>;
  close(): Promise<void>;
}

export class EngineError extends Error {
  override name = 'EngineError';
  readonly code: 'bad_request' | 'context_length_exceeded' | 'closed' | 'internal';
  constructor(code: EngineError['code'], message: string) { super(message); this.code = code; }
}

/** Drain a sample stream into its result. */
export async function collect(events: AsyncIterable<SampleEvent>): Promise<SampleResult> {
  for await (const ev of events) if (ev.type === 'done') return ev.result;
  throw new EngineError('internal', 'sample stream ended without a result');
}
