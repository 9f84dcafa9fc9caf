// When a learned effect counts as stable, as upstream's evaluation reports it: the number of
// conversations until the effect holds for `runs` consecutive evaluations. Pure.

export interface StableEffect {
  /** conversations at the first evaluation of the first streak of `runs` evaluations where the effect held (null: never) */
  at: number | null;
  /** conversations at the evaluation that completed that streak */
  confirmedAt: number | null;
}

/**
 * points: evaluations in order (conversations done, rate); the effect holds at an evaluation after the
 * first when rate ≥ base + gain, where base is the first evaluation's rate (before any training).
 */
export function stableEffect(points: { conversations: number; rate: number }[], gain: number, runs = 3): StableEffect {
  if (points.length === 0) return { at: null, confirmedAt: null };
  const target = points[0].rate + gain;
  let streak = 0;
  for (let i = 1; i < points.length; i++) {
    streak = points[i].rate >= target - 1e-12 ? streak + 1 : 0;
    if (streak === runs) return { at: points[i - runs + 1].conversations, confirmedAt: points[i].conversations };
  }
  return { at: null, confirmedAt: null };
}
