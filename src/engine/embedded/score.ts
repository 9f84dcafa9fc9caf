// Teacher-forced scoring: the log-prob of every response token after its prompt, under a given
// adapter (null = the base model). Requests are packed into shared forward passes; only response
// rows get logits, SCORE_ROWS rows at a time, so no [tokens × vocab] matrix is ever held.
import type { Transformer } from './model.ts';
import type { LoraAdapter } from './lora.ts';
import { logSumExp } from './ops/logits.ts';

export interface ResponseRequest { promptIds: number[]; responseIds: number[] }

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

export function scoreResponses(model: Transformer, requests: ResponseRequest[], adapter: LoraAdapter | null, temperature = 1): Float32Array[] {
  const { hiddenSize: H, vocabSize: V } = model.cfg;
  const invT = 1 / temperature;
  const out: Float32Array[] = [];
  const logits = model.arena.alloc(SCORE_ROWS * V);
  try {
    for (const group of packRows(requests)) {
      const items = group.map((r) => ({ tokens: fedTokens(r), cache: model.newCache(), adapter }));
      try {
        const hidden = model.forward(items);
        let base = 0;
        group.forEach((r, k) => {
          const lp = new Float32Array(r.responseIds.length);
          const first = base + r.promptIds.length - 1; // the row whose output predicts responseIds[0]
          for (let t0 = 0; t0 < lp.length; t0 += SCORE_ROWS) {
            const rows = Math.min(SCORE_ROWS, lp.length - t0);
            model.logits(logits, hidden.subarray((first + t0) * H, (first + t0 + rows) * H), rows);
            for (let i = 0; i < rows; i++) lp[t0 + i] = logits[i * V + r.responseIds[t0 + i]] * invT - logSumExp(logits, i * V, V, invT);
          }
          out.push(lp);
          base += items[k].tokens.length;
        });
      } finally {
        for (const it of items) it.cache.release();
      }
    }
  } finally {
    model.arena.free(logits);
  }
  return out;
}
