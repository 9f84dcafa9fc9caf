// One generation inside the embedded engine's scheduler: its prompt, the version it is pinned to, its
// KV cache once admitted, and what it produced. `sampleNext` turns the logits row of its last
// position into the next token: the output constraint masks first, the sampler draws with the
// sequence's own RNG, and stop ids, stop strings, the constraint's end, max tokens and the context
// end decide when it is done. Text is released as it becomes final (incomplete characters and
// possible stop-string prefixes are held back until they resolve).
import { sampleToken, topIndices } from './sampler.ts';
import { machineFor, allowedTokens, maskLogits, TokenTexts, type CharMachine } from './constraint.ts';
import { logSumExp } from './ops/logits.ts';
import { Rng, randomSeed } from './rng.ts';
import { IncrementalDecoder, StopMatcher } from './detokenize.ts';
import type { ChatTokenizer } from './tokenizer.ts';
import type { KvCache } from './kv-cache.ts';
import type { LoraAdapter } from './lora.ts';
import type { ModelWeights } from './weights.ts';
import type { SampleParams, SampleResult, SampledToken } from '../types.ts';

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

export function newSequence(
  key: number, version: number, w: { adapter: LoraAdapter | null; weights?: ModelWeights }, promptIds: number[], params: SampleParams,
  tokenizer: ChatTokenizer, eosTokenIds: number[],
): Sequence {
  const stopIds = new Set<number>(params.stopTokenIds ?? []);
  if (!params.ignoreEos) for (const id of eosTokenIds) stopIds.add(id);
  return {
    key, version, adapter: w.adapter, weights: w.weights, promptIds, params, cache: null, plannedBytes: 0, ids: [], logprobs: [],
    rng: new Rng(params.seed ?? randomSeed()), decoder: new IncrementalDecoder(tokenizer, promptIds),
    stops: new StopMatcher(params.stop ?? []), stopIds, prefilled: false, aborted: false, tail: '', result: null,
  };
}

/** What sampleNext needs from the engine. */
export interface SampleContext {
  texts: () => TokenTexts;
  contextLength: number;
  finish: (s: Sequence, reason: SampleResult['finishReason'], stoppedBy?: number | string) => SampleResult;
}

/** Masks the logits of tokens that would leave the sequence's constraint (engine/embedded/constraint.ts). */
function constrain(s: Sequence, logits: Float32Array, off: number, V: number, ctx: SampleContext): void {
  const c = s.params.constraint!;
  s.machine ??= machineFor(c);
  const budget = Math.min(s.params.maxTokens - s.ids.length, ctx.contextLength - s.cache!.length);
  const allowed = allowedTokens(s.machine, ctx.texts(), s.stopIds, budget, c.type === 'tool_call');
  if (allowed.length > 0) maskLogits(logits, off, V, allowed);
}

/** The next token of `s` from the logits row at `off`; sets s.result (through ctx.finish) when the sequence ends. */
export function sampleNext(s: Sequence, logits: Float32Array, off: number, V: number, ctx: SampleContext): SampledToken {
  s.prefilled = true;
  if (s.params.constraint) constrain(s, logits, off, V, ctx);
  const c = sampleToken(logits, off, V, s.params, () => s.rng.next());
  if (s.machine && !s.stopIds.has(c.id)) for (const ch of ctx.texts().texts[c.id]) s.machine.push(ch);
  s.ids.push(c.id);
  s.logprobs.push(c.logprob);
  const isStopId = s.stopIds.has(c.id);
  let text = isStopId ? '' : s.stops.push(s.decoder.push(c.id));
  if (isStopId) s.result = ctx.finish(s, 'stop', c.id);
  else if (s.stops.matched !== null) s.result = ctx.finish(s, 'stop', s.stops.matched);
  else if (s.machine?.done && s.stopIds.size === 0) s.result = ctx.finish(s, 'stop');
  else if (s.ids.length >= s.params.maxTokens || s.cache!.length + 1 > ctx.contextLength) s.result = ctx.finish(s, 'length');
  if (s.result) text += s.tail;
  const token: SampledToken = { id: c.id, logprob: c.logprob, text };
  if (s.params.topLogprobs) {
    const invT = s.params.temperature > 0 ? 1 / s.params.temperature : 1;
    const lse = logSumExp(logits, off, V, invT);
    token.top = topIndices(logits, off, V, s.params.topLogprobs).map((id) => ({ id, logprob: logits[off + id] * invT - lse }));
  }
  return token;
}

/** Release what an incomplete character or a possible stop-string prefix held back; returns what stopped it. */
export function closeText(s: Sequence, reason: SampleResult['finishReason'], stoppedBy?: number | string): number | string | undefined {
  if (reason === 'abort' || s.stops.matched !== null) return stoppedBy;
  s.tail = s.stops.push(s.decoder.flush());
  if (s.stops.matched === null) s.tail += s.stops.flush();
  else stoppedBy = s.stops.matched;
  return stoppedBy;
}

/** The text each token id adds after other text (decoded behind an anchor, so leading spaces survive). */
export function tokenTextsOf(tokenizer: ChatTokenizer, V: number): TokenTexts {
  const anchor = tokenizer.encode('a', false).slice(-1);
  const base = tokenizer.decode(anchor, false);
  const texts: string[] = new Array(V);
  for (let id = 0; id < V; id++) {
    let t = '';
    try { t = tokenizer.decode([...anchor, id], false).slice(base.length); } catch { /* not in the tokenizer: never allowed */ }
    texts[id] = t.includes('\uFFFD') ? '' : t;
  }
  return new TokenTexts(texts);
}
