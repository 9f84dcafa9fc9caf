// Directional finite-difference checks of a LoRA trainer's gradient: a random direction over the
// adapter's tensors, the analytic derivative along it (gradient · direction), and the central
// difference of a loss along it; and the whole-distribution terms (exact KL, entropy guard), computed apart from the training head.
import type { LoraTrainer } from '../../src/engine/embedded/trainer.ts';
import type { Rng } from '../../src/engine/embedded/rng.ts';
import type { Transformer } from '../../src/engine/embedded/model.ts';
import type { LoraAdapter } from '../../src/engine/embedded/lora.ts';
import type { ModelWeights } from '../../src/engine/embedded/weights.ts';
import type { Datum } from '../../src/engine/types.ts';
import { scoreHidden } from '../../src/engine/embedded/score.ts';
import { logSumExp } from '../../src/engine/embedded/ops/logits.ts';
import { fullKlRow, entropyExcessRow, type LossSpec } from '../../src/learn/losses.ts';

/** The gradient one forwardBackward call accumulates, flattened, and the call's loss sum; the trainer is cleared afterwards. */
export function gradientOf(tr: LoraTrainer, data: Datum[], spec: LossSpec): { g: number[]; loss: number } {
  const m = tr.forwardBackward(data, spec);
  const g = [...tr.grads.tensors()].flatMap((t) => Array.from(t.data));
  tr.grads.zero(); tr.pendingTokens = 0;
  return { g, loss: m.loss * m.tokens };
}

/** One random direction per adapter tensor (zero for tensors `include` leaves out). */
export function adapterDirections(tr: LoraTrainer, rng: Rng, include: (t: { target: string; which: string }) => boolean = () => true): Float32Array[] {
  return [...tr.adapter.tensors()].map((p) => Float32Array.from({ length: p.data.length }, () => (include(p) ? rng.next() * 2 - 1 : 0)));
}

/** The accumulated gradient · `dirs`; the gradient is cleared afterwards. */
export function gradientAlong(tr: LoraTrainer, dirs: Float32Array[]): number {
  let dot = 0;
  [...tr.grads.tensors()].forEach((g, i) => { for (let j = 0; j < g.data.length; j++) dot += g.data[j] * dirs[i][j]; });
  tr.grads.zero(); tr.pendingTokens = 0;
  return dot;
}

/** (loss(w + h·dirs) − loss(w − h·dirs)) / 2h; the weights are restored. */
export function centralDifference(tr: LoraTrainer, dirs: Float32Array[], loss: () => number, h = 1e-3): number {
  const params = [...tr.adapter.tensors()];
  const shift = (sign: number) => params.forEach((p, i) => { for (let j = 0; j < p.data.length; j++) p.data[j] += sign * h * dirs[i][j]; });
  shift(1);
  const plus = loss();
  shift(-2);
  const minus = loss();
  shift(1);
  return (plus - minus) / (2 * h);
}

/**
 * The whole-distribution terms as the tests compute them apart from the training head: KL(π‖π_base)
 * summed over the vocabulary, and the entropy excess max(0, H(π) − H(π_base)), each summed over the
 * response positions (masked ones skipped), from each model's hidden states and LM head — the
 * policy's (`adapter` / `weights`) against the base's (the model's own weights). `guardActive` marks the
 * positions where the guard is on: where it differs between θ + h and θ − h the difference crossed the
 * guard's kink and says nothing about the gradient.
 */
export function wholeDistributionSums(model: Transformer, data: Datum[], adapter: LoraAdapter | null, weights: ModelWeights | undefined, temperature: number): { kl: number; entropyExcess: number; guardActive: string } {
  const V = model.cfg.vocabSize, H = model.cfg.hiddenSize;
  const policy = scoreHidden(model, data, adapter, weights), base = scoreHidden(model, data, null);
  const rowIn = model.arena.alloc(H), rowOut = model.arena.alloc(V);
  const logProbs = (hidden: Float32Array, t: number, w: ModelWeights | undefined) => {
    rowIn.set(hidden.subarray(t * H, (t + 1) * H));
    model.logits(rowOut, rowIn, 1, w ?? model.weights);
    const lse = logSumExp(rowOut, 0, V, 1 / temperature);
    return Array.from(rowOut, (x) => x / temperature - lse);
  };
  const sums = { kl: 0, entropyExcess: 0, guardActive: '' };
  try {
    data.forEach((d, k) => {
      for (let t = 0; t < d.responseIds.length; t++) {
        const mask = d.lossMask?.[t] ?? 1;
        if (mask === 0) continue;
        const p = logProbs(policy[k], t, weights), b = logProbs(base[k], t, undefined);
        sums.kl += mask * fullKlRow(p, b);
        const excess = entropyExcessRow(p, b);
        sums.entropyExcess += mask * excess;
        sums.guardActive += excess > 0 ? '1' : '0';
      }
    });
  } finally {
    model.arena.free(rowIn); model.arena.free(rowOut);
  }
  return sums;
}
