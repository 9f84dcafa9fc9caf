// Turns token ids sampled elsewhere (a Tinker sampler, a vLLM or SGLang server) into this project's
// SampleEvents, with the same text, stop-id and stop-string rules as the embedded engine: the text
// of each token, held back while a stop string may be forming; generation ends at a stop id (EOS
// unless ignoreEos), a stop string or maxTokens, and tokens a server sends after that are dropped.
// One token is held back until the next arrives (or the stream ends), so the last token can carry
// the text released at the end.
import { IncrementalDecoder, StopMatcher } from './embedded/detokenize.ts';
import type { Tokenizer, SampleParams, SampledToken, SampleResult, FinishReason } from './types.ts';

export class SampleAssembler {
  readonly ids: number[] = [];
  readonly logprobs: number[] = [];
  private readonly decoder: IncrementalDecoder;
  private readonly stops: StopMatcher;
  private readonly stopIds: Set<number>;
  private readonly params: SampleParams;
  private pending: SampledToken | null = null;
  private stoppedBy: number | string | undefined;
  /** generation has ended here (stop id, stop string or maxTokens) */
  ended = false;

  constructor(tok: Tokenizer, promptIds: number[], params: SampleParams, eosTokenIds: number[]) {
    this.params = params;
    this.decoder = new IncrementalDecoder(tok, promptIds);
    this.stops = new StopMatcher(params.stop ?? []);
    this.stopIds = new Set([...(params.stopTokenIds ?? []), ...(params.ignoreEos ? [] : eosTokenIds)]);
  }

  /** Add a sampled token; returns the previous one, now complete, to emit (or null). */
  push(id: number, logprob: number, top?: SampledToken['top']): SampledToken | null {
    if (this.ended) return null;
    this.ids.push(id);
    this.logprobs.push(logprob);
    const isStopId = this.stopIds.has(id);
    const text = isStopId ? '' : this.stops.push(this.decoder.push(id));
    if (isStopId) { this.ended = true; this.stoppedBy = id; }
    else if (this.stops.matched !== null) { this.ended = true; this.stoppedBy = this.stops.matched; }
    else if (this.ids.length >= this.params.maxTokens) this.ended = true;
    const out = this.pending;
    this.pending = { id, logprob, text, ...(top ? { top } : {}) };
    return out;
  }

  /** The stream ended (`reason` as the server says): the last token (with any released text) and the result. */
  finish(reason: FinishReason, promptTokens: number, policyVersion: number): { last: SampledToken | null; result: SampleResult } {
    const last = this.pending;
    this.pending = null;
    if (last && reason !== 'abort' && this.stops.matched === null) {
      let tail = this.stops.push(this.decoder.flush());
      if (this.stops.matched === null) tail += this.stops.flush();
      else this.stoppedBy = this.stops.matched;
      last.text += tail;
    }
    const finishReason: FinishReason = this.stoppedBy !== undefined ? 'stop' : reason === 'abort' ? 'abort'
      : this.ids.length >= this.params.maxTokens ? 'length' : reason;
    return {
      last,
      result: { ids: this.ids, logprobs: this.logprobs, text: this.stops.fullText, finishReason, stoppedBy: this.stoppedBy, promptTokens, policyVersion },
    };
  }
}
