// Variety across a set of answers, as pure math: the share of distinct token n-grams among all of them (distinct-n).
// The fluency check reads each answer alone, so a policy that tells one fluent story to every request passes it; a
// learned preference that collapses the answers onto one opening shows here as a fall against the base's own value.

/** Distinct n-grams over all n-grams of the answers (0 when there are none); n-grams do not cross answers. */
export function distinctNgrams(answers: readonly (readonly number[])[], n = 2): number {
  if (!(Number.isInteger(n) && n >= 1)) throw new RangeError(`n must be a positive integer, got ${n}`);
  const seen = new Set<string>();
  let total = 0;
  for (const ids of answers) {
    for (let i = 0; i + n <= ids.length; i++) {
      seen.add(ids.slice(i, i + n).join(','));
      total++;
    }
  }
  return total === 0 ? 0 : seen.size / total;
}
