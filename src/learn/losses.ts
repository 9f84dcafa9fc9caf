// Per-token losses and their derivatives with respect to the learner's log-prob. Pure functions:
// the engine calls them for every response token and backpropagates `dlogp`.
//
// Aggregation is token-level: losses are summed over every unmasked token of every forward/backward
// call, and the optimizer step divides by the number of those tokens (the mean over the optimizer
// batch), so long and short responses weigh the same per token.

export interface PpoLoss {
  kind: 'ppo';
  /** ratio clip range [1 − clipLow, 1 + clipHigh] (defaults 0.2 / 0.28, as upstream) */
  clipLow?: number;
  clipHigh?: number;
  /** β of the β·KL(π_θ‖π_base) penalty, 0 = off; costs one forward with adapters off */
  klCoef?: number;
  /** how the penalty is estimated at the sampled tokens (see KlEstimator; default k3) */
  klEstimator?: KlEstimator;
  /**
   * λ of the entropy guard, λ·max(0, H(π) − H(π_base)) at each response position (entropyExcessRow),
   * 0 = off; like the `full` KL term it rebuilds the base's logits from its hidden states (one more
   * LM-head product per response token)
   */
  entropyGuard?: number;
}
/**
 * The per-token KL-to-base term in the loss, at tokens sampled from the policy:
 * - `k3` (e^(b−p) − (b−p) − 1): its expected gradient is that of the *forward* KL(π_base‖π_θ). Its
 *   push is bounded (coefficient 1 − e^(b−p) ≤ 1) where the policy made a token likelier than the base
 *   did, and unbounded where the policy made it less likely: it fights the preference it learns and
 *   barely holds back mass moving to tokens the base finds unlikely (misspelt words at T = 1).
 * - `k2` (½(p − b)²): its expected gradient is that of the *reverse* KL(π_θ‖π_base), the quantity
 *   the evaluation reports: the coefficient p − b grows with how much likelier the policy made the
 *   token than the base, so tokens the base would almost never write are pushed back hardest.
 * - `full`: KL(π‖π_base) itself, summed over the whole vocabulary at each response position (the base's
 *   distribution there is kept for the step). The same expected gradient as k2 without its sampling
 *   noise: a policy that moved mass onto tokens the base finds unlikely is pushed back at every
 *   position, not only where such a token happened to be sampled. Costs [tokens × vocab] floats.
 */
export type KlEstimator = 'k3' | 'k2' | 'full';
export interface CrossEntropyLoss { kind: 'cross_entropy' }
export type LossSpec = (PpoLoss | CrossEntropyLoss) & {
  /** log-probs are of softmax(logits / T): use the temperature the tokens were sampled at (default 1) */
  temperature?: number;
};

export const PPO_DEFAULTS = { clipLow: 0.2, clipHigh: 0.28, klCoef: 0, klEstimator: 'k3' as KlEstimator, entropyGuard: 0 };

export interface TokenTerm { loss: number; dlogp: number; ratio: number; clipped: boolean }

/**
 * Clipped surrogate: loss = −min(ρ·A, clip(ρ, 1−εl, 1+εh)·A) with ρ = exp(logp − behaviourLogp).
 * Where the clipped branch is the minimum the loss is flat in logp (no gradient).
 */
export function ppoToken(logp: number, behaviourLogp: number, advantage: number, clipLow: number, clipHigh: number): TokenTerm {
  const ratio = Math.exp(logp - behaviourLogp);
  const clippedRatio = Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh);
  const unclipped = ratio * advantage, clipped = clippedRatio * advantage;
  if (clipped < unclipped) return { loss: -clipped, dlogp: 0, ratio, clipped: true };
  return { loss: -unclipped, dlogp: -ratio * advantage, ratio, clipped: false };
}

/** p is held under this in the unlikelihood term, so a token the policy is certain of still has a finite loss. */
export const UNLIKELIHOOD_MAX_P = 1 - 1e-6;

/**
 * Unlikelihood of a sampled token (Welleck et al., 2019): −log(1 − p), with its derivative in log p, p/(1 − p).
 * Through the softmax its push on the token's logit is p, where a policy-gradient −1 pushes with 1 − p: a loop the
 * policy is nearly sure of (p ≈ 0.95 at each repeated piece) is barely moved by a negative reward and fully by this.
 */
export function unlikelihoodToken(logp: number): { loss: number; dlogp: number } {
  const p = Math.min(Math.exp(logp), UNLIKELIHOOD_MAX_P);
  return { loss: -Math.log1p(-p), dlogp: p / (1 - p) };
}

/** k3 estimator of KL(π‖π_base) at a sampled token: e^(b−p) − (b−p) − 1 ≥ 0, with its derivative in p. */
export function k3Token(logp: number, baseLogp: number): { kl: number; dlogp: number } {
  const d = baseLogp - logp;
  return { kl: Math.exp(d) - d - 1, dlogp: 1 - Math.exp(d) };
}

/** k2 estimator at a sampled token: ½(p − b)², with its derivative in p (see KlEstimator). */
export function k2Token(logp: number, baseLogp: number): { kl: number; dlogp: number } {
  const d = logp - baseLogp;
  return { kl: 0.5 * d * d, dlogp: d };
}

/** The KL term of a sampled-token `estimator` at a sampled token. */
export function klToken(estimator: Exclude<KlEstimator, 'full'>, logp: number, baseLogp: number): { kl: number; dlogp: number } {
  return estimator === 'k2' ? k2Token(logp, baseLogp) : k3Token(logp, baseLogp);
}

/**
 * KL(π‖π_base) = Σ_j π_j (log π_j − log b_j) at one position, from both distributions' log-probs over
 * the vocabulary, and (into `dz` when given) its gradient in the tempered logits z = logits / T:
 * ∂KL/∂z_j = π_j (log π_j − log b_j − KL). Terms with π_j = 0 add nothing.
 */
export function fullKlRow(logp: ArrayLike<number>, baseLogp: ArrayLike<number>, dz?: Float32Array | Float64Array): number {
  if (logp.length !== baseLogp.length) throw new Error(`fullKlRow: ${logp.length} policy log-probs against ${baseLogp.length} base log-probs`);
  let kl = 0;
  for (let j = 0; j < logp.length; j++) {
    const p = Math.exp(logp[j]);
    if (p > 0) kl += p * (logp[j] - baseLogp[j]);
  }
  if (dz) {
    for (let j = 0; j < logp.length; j++) {
      const p = Math.exp(logp[j]);
      dz[j] = p > 0 ? p * (logp[j] - baseLogp[j] - kl) : 0;
    }
  }
  return kl;
}

/**
 * The entropy guard at one position: how far the policy's entropy H(π) = −Σ π_j log π_j rose above the
 * base's, max(0, H(π) − H(π_base)), and (into `dz` when given) its gradient in the tempered logits:
 * −π_j (log π_j + H(π)) where the policy is the more uncertain, else 0. A policy that spreads mass over
 * the vocabulary's tail writes misspelt words at T = 1; the guard pushes only that spread back, and
 * leaves a policy that became surer than the base alone.
 */
export function entropyExcessRow(logp: ArrayLike<number>, baseLogp: ArrayLike<number>, dz?: Float32Array | Float64Array): number {
  if (logp.length !== baseLogp.length) throw new Error(`entropyExcessRow: ${logp.length} policy log-probs against ${baseLogp.length} base log-probs`);
  let h = 0, hb = 0;
  for (let j = 0; j < logp.length; j++) {
    const p = Math.exp(logp[j]), b = Math.exp(baseLogp[j]);
    if (p > 0) h -= p * logp[j];
    if (b > 0) hb -= b * baseLogp[j];
  }
  const excess = Math.max(0, h - hb);
  if (dz) {
    for (let j = 0; j < logp.length; j++) {
      const p = Math.exp(logp[j]);
      dz[j] = excess > 0 && p > 0 ? -p * (logp[j] + h) : 0;
    }
  }
  return excess;
}

/** Negative log-likelihood of the target token. */
export function crossEntropyToken(logp: number): { loss: number; dlogp: number } {
  return { loss: -logp, dlogp: -1 };
}
