// The KL budget, as pure math: β of the KL-to-base term follows how far the policy has gone. Below the budget the
// recipe's β holds; above it β grows, a bounded step at a time, until the distance comes back under, and it falls
// back towards the recipe's β as it does. A proportional controller in the manner of Ziegler et al. (2019,
// "Fine-Tuning Language Models from Human Preferences"), held at or above the recipe's β so that training under
// the budget is exactly the recipe's.
//
// Why: once a preference is met the reward has little left to say, but the distilled term keeps pulling on every
// hinted turn and the policy keeps drifting; the drift, not the preference, is what costs the text (stories260k-chat
// on the tree persona: satisfied 89% at 32 conversations and KL 0.14, 93% at 96 and KL 0.23, with fluency down
// from 94% to 91%).

export interface KlBudget {
  /** the mean per-token KL to the base (the training batch's, as the loss computes it) the policy may spend */
  target: number;
  /** how strongly β answers a relative excess: β·(1 + gain·clip(KL/target − 1, ±maxError)) */
  gain: number;
  /** the largest relative excess or shortfall one step answers (the controller's error clip) */
  maxError: number;
  /** β never grows past the recipe's β times this */
  maxFactor: number;
}

export const KL_BUDGET_DEFAULTS: Readonly<Omit<KlBudget, 'target'>> = Object.freeze({ gain: 1, maxError: 0.2, maxFactor: 20 });

/** β for the next step, from this step's β and KL; a step with no KL measured leaves β as it was. */
export function nextKlCoef(beta: number, kl: number | null, recipeBeta: number, budget: KlBudget): number {
  if (kl === null || !Number.isFinite(kl) || recipeBeta <= 0) return beta;
  const error = Math.max(-budget.maxError, Math.min(budget.maxError, kl / budget.target - 1));
  const next = beta * (1 + budget.gain * error);
  return Math.max(recipeBeta, Math.min(recipeBeta * budget.maxFactor, next));
}
