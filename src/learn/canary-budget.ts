// The canary budget, as pure math: β of the KL-to-base term grows once everyday text (the weights guard's canary) has
// fallen more than a budget below the base model's log-likelihood of it, in proportion to the excess. Under the
// budget β is exactly the recipe's.
//
// Why: an approved answer keeps its reward once a preference is met (the lift baseline), so a long run on a met
// preference is a long run of positive advantages on the policy's own samples, which sharpens the distribution step
// after step. The KL term on those samples holds it at β 0.2, not at β 0.1: in the 3-minute load with a 5-minute
// judge outage (2,700+ steps of one preference), β 0.1 on reward-trained answers kept the canary near the base's
// (−2.4 → −2.9 nats per token) for 600 steps, then it fell to −11.3 by step 965, where the weights guard refuses
// every step that lowers it further (docs/benchmarks.md, issue 12 session 28). The persona runs' 36 steps move it
// by 0.2–1.07. Keyed on the canary, not on the batch's KL: the load's batch KL (0.3–0.5) stayed within the
// persona runs' (up to 0.8) while the canary fell.

export interface CanaryBudget {
  /** how far (nats per canary token) the canary's mean log-prob may fall below the base's before β grows */
  budget: number;
  /** β's growth per budget of excess: ×(1 + gain·(fall − budget)/budget) */
  gain: number;
  /** β never grows past the recipe's times this */
  maxFactor: number;
}

export const CANARY_BUDGET_DEFAULTS: Readonly<Omit<CanaryBudget, 'budget'>> = Object.freeze({ gain: 4, maxFactor: 20 });

/**
 * The multiple of the recipe's β (both the full β and the reward β) for a canary that has fallen `fall` nats per
 * token below the base's: 1 up to the budget, then growing linearly, at most maxFactor. A fall that is not a number
 * (no canary, a broken one) leaves β as it is: the weights guard deals with broken weights.
 */
export function canaryKlFactor(fall: number, b: CanaryBudget): number {
  if (!(b.budget > 0) || !Number.isFinite(fall) || fall <= b.budget) return 1;
  return Math.min(b.maxFactor, 1 + (b.gain * (fall - b.budget)) / b.budget);
}
