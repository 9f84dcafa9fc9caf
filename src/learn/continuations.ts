// Multi-turn samples share their context: an agent's turn k+1 is prompted with turn k's prompt, its
// sampled response and the tool's observation. Trained as separate data, that shared context is run
// through the model once per turn. Merged into one datum — the first prompt, then each response with
// the observation tokens between them in the response but out of the loss (mask 0) — every trained
// token keeps its exact context (attention is causal), so its log-prob, loss and gradient are the
// same, for one pass over the context instead of one per turn. Pure.
import type { Datum } from '../engine/types.ts';

function startsWith(ids: readonly number[], head: readonly number[], tail: readonly number[]): boolean {
  if (ids.length < head.length + tail.length) return false;
  for (let i = 0; i < head.length; i++) if (ids[i] !== head[i]) return false;
  for (let i = 0; i < tail.length; i++) if (ids[head.length + i] !== tail[i]) return false;
  return true;
}

/** Whether a datum can take part: the per-token fields merging knows how to carry, and no more. */
function mergeable(d: Datum): boolean {
  return !d.distill && !d.teacherLogprobs && !d.unlikelihood && Array.isArray(d.advantages) && Array.isArray(d.behaviourLogprobs);
}

/**
 * Merge every datum whose prompt continues another one's prompt + response (at the same
 * temperature) into that one; the rest pass unchanged, in order. `merged` counts the data folded
 * into another.
 */
export function mergeContinuations(data: readonly Datum[]): { data: Datum[]; merged: number } {
  const out: Datum[] = [];
  let merged = 0;
  for (const d of data) {
    const into = mergeable(d) ? out.findIndex((m) => mergeable(m) && m.temperature === d.temperature && startsWith(d.promptIds, m.promptIds, m.responseIds)) : -1;
    if (into < 0) { out.push(d); continue; }
    const m = out[into];
    const gap = d.promptIds.slice(m.promptIds.length + m.responseIds.length);
    const zeros = gap.map(() => 0);
    const mask = (x: Datum) => x.lossMask ?? x.responseIds.map(() => 1);
    out[into] = {
      promptIds: m.promptIds,
      responseIds: [...m.responseIds, ...gap, ...d.responseIds],
      advantages: [...m.advantages!, ...zeros, ...d.advantages!],
      behaviourLogprobs: [...m.behaviourLogprobs!, ...zeros, ...d.behaviourLogprobs!],
      lossMask: [...mask(m), ...zeros, ...mask(d)],
      ...(m.temperature !== undefined ? { temperature: m.temperature } : {}),
    };
    merged++;
  }
  return { data: out, merged };
}
