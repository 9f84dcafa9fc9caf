// The tail guard, as pure math: a token sampled from the far tail of the policy's own distribution is not reinforced.
// At temperature 1 a 512-piece vocabulary spells a word one piece at a time, and a small share of the mass on the
// wrong piece is a misspelt word ("norcim", "butggy") in a few answers of every batch. An approved answer reinforces
// all of its tokens alike, and a rare token gets the largest push of all (the gradient of log p is 1 − p at the token
// itself), so the misspellings the user happened to approve around the topic grow. Their behaviour log-probs, recorded
// at sampling, say which they are: the guard sets the positive advantage of a token below the floor to 0. Negative
// advantages stay (pushing a tail token down is what the text needs), and the KL and entropy terms act as before.

/** The positive advantages of tokens sampled below the floor (behaviour log-prob) set to 0, and how many were. */
export function guardTail(advantages: readonly number[], behaviour: readonly number[], floor: number): { advantages: number[]; zeroed: number } {
  if (!(floor < 0)) throw new RangeError(`the tail guard's floor is a log-prob below 0, got ${floor}`);
  let zeroed = 0;
  const out = advantages.map((a, t) => {
    const lp = behaviour[t];
    if (a > 0 && lp !== undefined && lp < floor) { zeroed++; return 0; }
    return a;
  });
  return { advantages: out, zeroed };
}
