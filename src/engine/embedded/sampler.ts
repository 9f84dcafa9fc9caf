// Choosing the next token from one row of logits. Pure: logits in, {id, logprob} out.
//
// The log-probability recorded for a sampled token is log softmax(logits / T)[id]: the
// temperature-scaled distribution over the whole vocabulary, before top-k/top-p truncation
// (the quantity SGLang and vLLM report, and the one a trainer can recompute exactly by scoring the
// same tokens at the same temperature). With T = 0 (greedy) it is the raw T = 1 log-probability.
import { argmax, logSumExp } from './ops/logits.ts';

export interface SamplingParams {
  /** 0 = greedy */
  temperature: number;
  /** nucleus mass to keep, 1 = off */
  topP: number;
  /** keep the k most likely tokens, 0 = off */
  topK: number;
}

export interface Choice { id: number; logprob: number }

export function sampleToken(logits: Float32Array, off: number, vocab: number, p: SamplingParams, rand: () => number): Choice {
  if (p.temperature <= 0) {
    const id = argmax(logits, off, vocab);
    return { id, logprob: logits[off + id] - logSumExp(logits, off, vocab) };
  }
  const invT = 1 / p.temperature;
  const logZ = logSumExp(logits, off, vocab, invT);
  const logprobOf = (id: number) => logits[off + id] * invT - logZ;
  const truncate = (p.topK > 0 && p.topK < vocab) || p.topP < 1;
  if (!truncate) {
    // inverse CDF over the full distribution
    let u = rand();
    for (let i = 0; i < vocab; i++) {
      u -= Math.exp(logprobOf(i));
      if (u < 0) return { id: i, logprob: logprobOf(i) };
    }
    const id = argmax(logits, off, vocab); // rounding left u ≥ 0: fall back to the mode
    return { id, logprob: logprobOf(id) };
  }
  const kept = nucleus(logits, off, vocab, p, logprobOf);
  let total = 0;
  for (const id of kept) total += Math.exp(logprobOf(id));
  let u = rand() * total;
  for (const id of kept) {
    u -= Math.exp(logprobOf(id));
    if (u < 0) return { id, logprob: logprobOf(id) };
  }
  const id = kept[0];
  return { id, logprob: logprobOf(id) };
}

/** Token ids kept by top-k then top-p, most likely first. */
export function nucleus(logits: Float32Array, off: number, vocab: number, p: SamplingParams, logprobOf: (id: number) => number): number[] {
  const kMax = p.topK > 0 ? Math.min(p.topK, vocab) : vocab;
  // grow the candidate set until it covers top_p (usually a few dozen tokens suffice)
  for (let k = Math.min(kMax, 64); ; k = Math.min(kMax, k * 4)) {
    const ids = topIndices(logits, off, vocab, k);
    if (p.topP >= 1) return ids;
    let cum = 0;
    for (let i = 0; i < ids.length; i++) {
      cum += Math.exp(logprobOf(ids[i]));
      // keep the smallest prefix whose mass reaches top_p (the token that crosses it is kept)
      if (cum >= p.topP) return ids.slice(0, i + 1);
    }
    if (k === kMax) return ids;
  }
}

/** Indices of the k largest values, largest first (min-heap selection, O(n log k)). */
export function topIndices(x: Float32Array, off: number, n: number, k: number): number[] {
  k = Math.min(k, n);
  const heap = new Int32Array(k);
  let size = 0;
  const less = (a: number, b: number) => x[off + a] < x[off + b] || (x[off + a] === x[off + b] && a > b);
  const siftDown = (i: number) => {
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < size && less(heap[l], heap[m])) m = l;
      if (r < size && less(heap[r], heap[m])) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  };
  for (let i = 0; i < n; i++) {
    if (size < k) {
      heap[size] = i;
      let j = size++;
      while (j > 0) { const parent = (j - 1) >> 1; if (!less(heap[j], heap[parent])) break; [heap[j], heap[parent]] = [heap[parent], heap[j]]; j = parent; }
    } else if (less(heap[0], i)) {
      heap[0] = i;
      siftDown(0);
    }
  }
  return Array.from(heap.subarray(0, size)).sort((a, b) => x[off + b] - x[off + a] || a - b);
}
