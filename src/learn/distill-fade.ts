// The distillation term's fade, as pure math: the hinted teacher keeps asking for more of what the hint names even
// after the answers have it ("…a story about a fish": a fish in the first sentence, then another, then a fish named
// Fish), and once most answers please the user the reward term has little left to say (its advantages are taken
// against the recent rewards' mean) while the distilled term keeps pushing the policy away from the base. The fade
// scales the distilled term by how often the recent answers still miss: in full while at least a given share (the
// knee) of them miss, then in proportion, never below a floor, so that the KL and entropy terms, which do not fade, pull the text back.

/** The smallest scale the distilled term fades to. */
export const DISTILL_FADE_FLOOR = 0.2;

/**
 * The distilled term's scale from recent rewards (newest or oldest first alike): min(1, share ≤ 0 / knee), at least
 * the floor. A knee of 0.5 keeps it in full while half the answers miss; 0.25 until three in four please.
 */
export function distillFade(recent: readonly number[], knee: number, floor = DISTILL_FADE_FLOOR): number {
  if (!(knee > 0 && knee <= 1)) throw new RangeError(`the fade's knee must be in (0, 1], got ${knee}`);
  if (recent.length === 0) return 1;
  const missing = recent.filter((r) => r <= 0).length / recent.length;
  return Math.max(floor, Math.min(1, missing / knee));
}
