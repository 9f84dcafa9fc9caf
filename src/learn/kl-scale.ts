// Two strengths of the KL-to-base term in one batch, as pure math: the loss spec carries one β, and each datum
// scales it (Datum.klScale). An answer trained by its reward alone takes the reward β; a distilled answer, or one
// that carries only the regularisers, the full β. The spec's β is the larger of the two, so every scale is at most 1
// and a β of 0 on either side is exact.

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
