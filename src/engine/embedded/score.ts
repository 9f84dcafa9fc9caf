// Teacher-forced scoring: the log-prob of every response token after its prompt, under a given
// adapter (null = the base model). Requests are packed into shared forward passes; only response
// rows get logits, SCORE_ROWS rows at a time, so no [tokens × vocab] matrix is ever held.
import type { Transformer } from './model.ts';
import type { LoraAdapter } from './lora.ts';
import type { ModelWeights } from './weights.ts';
import type { KvCache } from './kv-cache.ts';
import { logSumExp } from './ops/logits.ts';
import { topIndices } from './sampler.ts';
import type { TopKScore } from '../types.ts';

export interface ResponseRequest { promptIds: number[]; responseIds: number[]; gatherIds?: number[][] }

const SCORE_ROWS = 64;
/** tokens of several requests packed into one forward pass */
export const PACK_ROWS = 1024;

/** Groups of requests whose fed tokens (prompt + response − 1) stay within `maxRows` (a longer one goes alone). */
export function packRows<T extends ResponseRequest>(requests: T[], maxRows = PACK_ROWS): T[][] {
  const groups: T[][] = [];
  let rows = 0;
  for (const r of requests) {
    const n = r.promptIds.length + Math.max(0, r.responseIds.length - 1);
    if (groups.length === 0 || rows + n > maxRows) { groups.push([]); rows = 0; }
    groups.at(-1)!.push(r);
    rows += n;
  }
  return groups;
}

/** The fed tokens of a request: the last response token predicts nothing we need. */
export function fedTokens(r: ResponseRequest): number[] {
  return [...r.promptIds, ...r.responseIds.slice(0, -1)];
}

/**
 * Packed forward passes over `requests` (fresh caches); `visit(index, hidden, first)` sees each request's
 * final hidden rows, `first` being the row whose output predicts its first response token.
 */
function forwardResponses(model: Transformer, requests: ResponseRequest[], adapter: LoraAdapter | null, weights: ModelWeights | undefined,
  visit: (index: number, hidden: Float32Array, first: number) => void): void {
  let index = 0;
  for (const group of packRows(requests)) {
    const items = group.map((r) => ({ tokens: fedTokens(r), cache: model.newCache(), adapter, weights }));
    try {
      const hidden = model.forward(items);
      let row = 0;
      group.forEach((r, k) => {
        visit(index++, hidden, row + r.promptIds.length - 1);
        row += items[k].tokens.length;
      });
    } finally {
      for (const it of items) it.cache.release();
    }
  }
}

export function scoreResponses(model: Transformer, requests: ResponseRequest[], adapter: LoraAdapter | null, temperature = 1, weights?: ModelWeights): Float32Array[] {
  const { hiddenSize: H, vocabSize: V } = model.cfg;
  const invT = 1 / temperature;
  const out: Float32Array[] = [];
  const logits = model.arena.alloc(SCORE_ROWS * V);
  try {
    forwardResponses(model, requests, adapter, weights, (index, hidden, first) => {
      const r = requests[index], lp = new Float32Array(r.responseIds.length);
      for (let t0 = 0; t0 < lp.length; t0 += SCORE_ROWS) {
        const rows = Math.min(SCORE_ROWS, lp.length - t0);
        model.logits(logits, hidden.subarray((first + t0) * H, (first + t0 + rows) * H), rows, weights);
        for (let i = 0; i < rows; i++) lp[t0 + i] = logits[i * V + r.responseIds[t0 + i]] * invT - logSumExp(logits, i * V, V, invT);
      }
      out.push(lp);
    });
  } finally {
    model.arena.free(logits);
  }
  return out;
}

/**
 * The final hidden state of every response position ([responseIds.length × hidden] per request: row t is
 * the one whose logits response token t was drawn from), under `adapter` / `weights`. The reference of
 * the whole-distribution loss terms (learn/losses.ts: the exact KL, the entropy guard): the base's logits
 * are rebuilt from these rows a block at a time, so no [tokens × vocab] matrix is kept.
 */
export function scoreHidden(model: Transformer, requests: ResponseRequest[], adapter: LoraAdapter | null, weights?: ModelWeights): Float32Array[] {
  const H = model.cfg.hiddenSize;
  const out: Float32Array[] = [];
  forwardResponses(model, requests, adapter, weights, (index, hidden, first) => {
    out.push(hidden.slice(first * H, (first + requests[index].responseIds.length) * H));
  });
  return out;
}

/**
 * Where scoring gets its caches: `open` returns one holding the longest cached prefix of `tokens`
 * (at most `limit` positions; empty when none), `close` takes it back once `tokens` are all in it.
 */
export interface CacheSource {
  open(tokens: number[], limit: number): KvCache;
  close(tokens: number[], cache: KvCache): void;
}

/** Fresh caches, released after use (no prefix cache). */
export function freshCaches(model: Transformer): CacheSource {
  return { open: () => model.newCache(), close: (_, cache) => cache.release() };
}

interface OpenRequest { index: number; fed: number[]; promptLength: number; responseIds: number[]; gatherIds?: number[][]; cache: KvCache; out: TopKScore }

/**
 * Scoring in passes of at most `rowsPerPass()` fed rows, yielding after each pass (so the engine
 * thread can run decode steps between them). Each request starts from its longest cached prefix
 * (at most its prompt minus one token: the row that predicts the first response token is always
 * computed) and its cache is handed back afterwards. Long requests span passes; short ones share
 * a pass. Every row is computed exactly as in `scoreResponses`, so the log-probs are the same bits.
 */
export function* scoreSteps(
  model: Transformer, requests: ResponseRequest[], adapter: LoraAdapter | null, temperature: number,
  rowsPerPass: () => number, caches: CacheSource = freshCaches(model), weights?: ModelWeights,
): Generator<void, Float32Array[]> {
  const scores = yield* scoreStepsTopK(model, requests, adapter, temperature, rowsPerPass, 0, caches, weights);
  return scores.map((s) => s.logprobs);
}

/**
 * `scoreSteps` that also reports each response position's k most likely ids with their log-probs
 * (chosen and computed exactly as sampling's top_logprobs, so the two agree bit for bit) and the
 * log-probs of each request's `gatherIds` (top-K distillation: a teacher's log-probs at the
 * student's top-K ids).
 */
export function* scoreStepsTopK(
  model: Transformer, requests: ResponseRequest[], adapter: LoraAdapter | null, temperature: number,
  rowsPerPass: () => number, k: number, caches: CacheSource = freshCaches(model), weights?: ModelWeights,
): Generator<void, TopKScore[]> {
  const { hiddenSize: H, vocabSize: V } = model.cfg;
  const invT = 1 / temperature;
  const out: TopKScore[] = new Array(requests.length);
  const open: OpenRequest[] = [];
  let next = 0;
  const logits = model.arena.alloc(SCORE_ROWS * V);
  try {
    while (next < requests.length || open.length > 0) {
      // fill one pass: continue the open requests, then open new ones while rows remain
      let budget = rowsPerPass();
      if (budget <= 0) { yield; continue; } // none this turn (the pacer's credit is spent)
      const slices: { req: OpenRequest; from: number; to: number }[] = [];
      for (const req of open) {
        if (budget === 0) break;
        const from = req.cache.length, to = Math.min(req.fed.length, from + budget);
        slices.push({ req, from, to }); budget -= to - from;
      }
      while (budget > 0 && next < requests.length) {
        const r = requests[next];
        const fed = fedTokens(r);
        const cache = caches.open(fed, r.promptIds.length - 1);
        const n = r.responseIds.length;
        const req: OpenRequest = {
          index: next++, fed, promptLength: r.promptIds.length, responseIds: r.responseIds, gatherIds: r.gatherIds, cache,
          out: { logprobs: new Float32Array(n), topIds: k > 0 ? new Array(n) : [], topLogprobs: k > 0 ? new Array(n) : [], gathered: r.gatherIds ? new Array(n) : null },
        };
        open.push(req);
        const from = req.cache.length, to = Math.min(fed.length, from + budget);
        slices.push({ req, from, to }); budget -= to - from;
      }
      const hidden = model.forward(slices.map((s) => ({ tokens: s.req.fed.slice(s.from, s.to), cache: s.req.cache, adapter, weights })));
      let row0 = 0;
      for (const { req, from, to } of slices) {
        // the row at position q predicts response token q − (promptLength − 1)
        const first = Math.max(from, req.promptLength - 1), last = Math.min(to, req.promptLength - 1 + req.responseIds.length);
        for (let q0 = first; q0 < last; q0 += SCORE_ROWS) {
          const rows = Math.min(SCORE_ROWS, last - q0);
          model.logits(logits, hidden.subarray((row0 + q0 - from) * H, (row0 + q0 - from + rows) * H), rows, weights);
          for (let i = 0; i < rows; i++) {
            const t = q0 + i - (req.promptLength - 1);
            const lse = logSumExp(logits, i * V, V, invT);
            req.out.logprobs[t] = logits[i * V + req.responseIds[t]] * invT - lse;
            if (k > 0) {
              const ids = topIndices(logits, i * V, V, k);
              req.out.topIds[t] = ids;
              req.out.topLogprobs[t] = ids.map((id) => logits[i * V + id] * invT - lse);
            }
            if (req.gatherIds && req.out.gathered) req.out.gathered[t] = req.gatherIds[t].map((id) => logits[i * V + id] * invT - lse);
          }
        }
        row0 += to - from;
      }
      while (open.length > 0 && open[0].cache.length === open[0].fed.length) {
        const done = open.shift()!;
        out[done.index] = done.out;
        caches.close(done.fed, done.cache);
      }
      if (next < requests.length || open.length > 0) yield;
    }
  } finally {
    for (const req of open) caches.close(req.fed.slice(0, req.cache.length), req.cache);
    model.arena.free(logits);
  }
  return out;
}
