// Two strengths of the KL-to-base term in one batch, as pure math: the loss spec carries one β, and each datum
// scales it (Datum.klScale). An answer trained by its reward alone, or one the judge approved, takes the reward β; a
// distilled answer the judge did not approve, or one that carries only the regularisers, the full β. The spec's β is
// the larger of the two, so every scale is at most 1 and a β of 0 on either side is exact.

export interface KlScales {
  /** β for the loss spec */
  spec: number;
  /** per datum, its β as a multiple of spec (1 where spec is 0) */
  scales: number[];
}

export function klScales(fullBeta: number, rewardBeta: number, rewardTrained: boolean[]): KlScales {
  for (const [name, b] of [['β', fullBeta], ['the reward β', rewardBeta]] as const) {
    if (!(Number.isFinite(b) && b >= 0)) throw new Error(`${name} must be a finite number ≥ 0 (got ${b})`);
  }
  const spec = Math.max(fullBeta, rewardBeta);
  const scale = (b: number) => (spec === 0 ? 1 : b / spec);
  return { spec, scales: rewardTrained.map((r) => scale(r ? rewardBeta : fullBeta)) };
}

/** What decides an answer's β: what trains it, and what the judge made of it. */
export interface KlRole {
  /** a distillation term trains it (top-K sets or teacher log-probs) */
  distilled: boolean;
  /** the judge's reward, after the guards, is above 0 (false for anchors, which have none) */
  approved: boolean;
}

/**
 * Whether an answer takes the reward β. A distilled answer the user approved is anchored by that approval: holding it
 * to the full β kept a few percent of the base's favourite opening at the one position that decides a met preference
 * (bear through `serve`: "a little girl named Tom" among "a bear named Tom"; docs/benchmarks.md, issue 12 session 32).
 */
export function takesRewardBeta(r: KlRole): boolean {
  return !r.distilled || r.approved;
}
