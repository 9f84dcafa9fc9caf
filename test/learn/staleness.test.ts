// Decoupled-PPO correction of stale samples: truncated importance weights from the recorded
// behaviour log-probs, checked against hand-computed values, and equivalence with the PPO token loss.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importanceWeight, correctStaleness, cumulativeBuckets, prefixWeights, STALENESS_BUCKETS } from '../../src/learn/staleness.ts';
import { ppoToken } from '../../src/learn/losses.ts';

const close = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-12, `${msg}: ${a} vs ${b}`);

test('the importance weight is exp(proximal − behaviour), truncated at the cap', () => {
  const table: [number, number, number, number][] = [
    // proximal, behaviour, cap, expected
    [-1, -1, 2, 1],
    [-1, -1.5, 2, Math.exp(0.5)],
    [-2, -1, 2, Math.exp(-1)],
    [-0.1, -3, 2, 2],
    [-0.1, -3, 5, 5],
    [-3, -0.1, 2, Math.exp(-2.9)],
    [0, -Infinity, 2, 2],
    [-Infinity, -1, 2, 0],
  ];
  for (const [p, b, cap, want] of table) close(importanceWeight(p, b, cap), want, `w(${p}, ${b}, cap ${cap})`);
});

test('a stale sample: advantages scaled by the weights, the ratio taken against the proximal log-probs, truncations counted', () => {
  const c = correctStaleness({ advantages: [1, 1, -1, 0.5], behaviour: [-1, -2, -0.5, -4], proximal: [-1, -1.5, -1.5, -1] }, 2);
  const w = [1, Math.exp(0.5), Math.exp(-1), 2];
  c.weights.forEach((x, i) => close(x, w[i], `weight ${i}`));
  c.advantages.forEach((x, i) => close(x, [1, 1, -1, 0.5][i] * w[i], `advantage ${i}`));
  assert.deepEqual(c.oldLogprobs, [-1, -1.5, -1.5, -1]);
  assert.equal(c.truncated, 1);
});

test('a fresh sample (proximal = behaviour) is left exactly as it was', () => {
  const s = { advantages: [0.3, -0.7, 1], behaviour: [-0.2, -1.1, -3], proximal: [-0.2, -1.1, -3] };
  const c = correctStaleness(s);
  assert.deepEqual(c.advantages, s.advantages);
  assert.deepEqual(c.weights, [1, 1, 1]);
  assert.equal(c.truncated, 0);
});

test('the corrected PPO token equals w · the decoupled loss −min(r·A, clip(r)·A) with r against the proximal policy', () => {
  for (const [logp, prox, behav, a] of [[-1.2, -1, -1.4, 1], [-0.8, -1, -1.4, -1], [-1, -1, -3, 1], [-2, -1, -0.2, 0.5], [-0.5, -1, -1, -2]]) {
    const w = importanceWeight(prox, behav);
    const c = correctStaleness({ advantages: [a], behaviour: [behav], proximal: [prox] });
    const viaEngine = ppoToken(logp, c.oldLogprobs[0], c.advantages[0], 0.2, 0.28);
    const r = Math.exp(logp - prox);
    const decoupled = -w * Math.min(r * a, Math.min(Math.max(r, 0.8), 1.28) * a);
    close(viaEngine.loss, decoupled, `loss at logp ${logp}`);
  }
});

test('mismatched lengths and a cap below 1 are refused', () => {
  assert.throws(() => correctStaleness({ advantages: [1, 1], behaviour: [-1], proximal: [-1, -1] }), RangeError);
  assert.throws(() => correctStaleness({ advantages: [1], behaviour: [-1], proximal: [-1] }, 0.5), /at least 1/);
});

test('staleness buckets are cumulative, ending with +Inf', () => {
  assert.deepEqual(STALENESS_BUCKETS, [0, 1, 2, 4, 8, 16, 32, 64]);
  const table: [number[], number[], number[]][] = [
    [[], [0, 1, 2], [0, 0, 0, 0]],
    [[0, 0, 1, 3, 9], [0, 1, 2, 4, 8], [2, 3, 3, 4, 4, 5]],
    [[100], [0, 64], [0, 0, 1]],
  ];
  for (const [values, bounds, want] of table) assert.deepEqual(cumulativeBuckets(values, bounds), want, JSON.stringify(values));
});

test('prefix weights: the context\'s likelihood ratio before each position, truncated at the cap', () => {
  const table: { behaviour: number[]; proximal: number[]; cap?: number; expected: number[] }[] = [
    // a fresh sample (proximal = behaviour) weighs 1 everywhere
    { behaviour: [-1, -2, -0.5], proximal: [-1, -2, -0.5], expected: [1, 1, 1] },
    // the current weights find the first token half as likely: every later position weighs ½, the first 1
    { behaviour: [-1, -2, -0.5], proximal: [-1 - Math.LN2, -2, -0.5], expected: [1, 0.5, 0.5] },
    // ratios multiply along the context: ½ · ¼ = ⅛
    { behaviour: [-1, -1, -1, -1], proximal: [-1 - Math.LN2, -1 - 2 * Math.LN2, -1, -1], expected: [1, 0.5, 0.125, 0.125] },
    // a context the current weights like more is capped at 1 by default…
    { behaviour: [-2, -2, -2], proximal: [-1, -2, -2], expected: [1, 1, 1] },
    // …or at a higher cap when asked, and a later drop is taken from the running product
    { behaviour: [-2, -2, -2], proximal: [-2 + Math.LN2, -2 - 3 * Math.LN2, -2], cap: 4, expected: [1, 2, 0.25] },
    // a token the current weights cannot write ends the context's weight
    { behaviour: [-1, -1, -1], proximal: [-1, -Infinity, -1], expected: [1, 1, 0] },
    { behaviour: [], proximal: [], expected: [] },
  ];
  for (const [i, r] of table.entries()) {
    const got = prefixWeights(r.behaviour, r.proximal, r.cap);
    assert.equal(got.length, r.expected.length, `row ${i} length`);
    got.forEach((w, t) => close(w, r.expected[t], `row ${i} position ${t}`));
  }
  assert.throws(() => prefixWeights([-1], [-1, -2]), /differ in length/);
});
