import { test } from 'node:test';
import assert from 'node:assert/strict';
import { klScales, takesRewardBeta } from '../../src/learn/kl-scale.ts';

test('klScales: the spec takes the larger β, each datum its own β as a share of it', () => {
  const cases: { full: number; reward: number; trained: boolean[]; spec: number; scales: number[] }[] = [
    // the chat recipe's combine: distilled answers at 0.2, reward-trained ones at 0.1
    { full: 0.2, reward: 0.1, trained: [true, false, true], spec: 0.2, scales: [0.5, 1, 0.5] },
    // a reward β above the full one: the spec is the reward's, the distilled answers scale down
    { full: 0.1, reward: 0.3, trained: [true, false], spec: 0.3, scales: [1, 1 / 3] },
    // equal: every scale 1
    { full: 0.2, reward: 0.2, trained: [true, false], spec: 0.2, scales: [1, 1] },
    // no KL on reward-trained answers
    { full: 0.2, reward: 0, trained: [true, false], spec: 0.2, scales: [0, 1] },
    // none on distilled ones, while reward-trained answers keep theirs
    { full: 0, reward: 0.1, trained: [true, false], spec: 0.1, scales: [1, 0] },
    // no KL at all: the spec's 0 decides, the scales are 1
    { full: 0, reward: 0, trained: [true, false], spec: 0, scales: [1, 1] },
    { full: 0.2, reward: 0.1, trained: [], spec: 0.2, scales: [] },
  ];
  for (const c of cases) {
    const r = klScales(c.full, c.reward, c.trained);
    assert.equal(r.spec, c.spec, JSON.stringify(c));
    assert.deepEqual(r.scales.map((x) => +x.toFixed(12)), c.scales.map((x) => +x.toFixed(12)), JSON.stringify(c));
    // what each datum gets is its own β
    r.scales.forEach((s, i) => { if (c.spec > 0) assert.ok(Math.abs(s * r.spec - (c.trained[i] ? c.reward : c.full)) < 1e-12); });
  }
});

test('klScales refuses a β that is negative or not finite', () => {
  for (const [full, reward] of [[-0.1, 0.1], [0.1, Number.NaN], [Infinity, 0]]) {
    assert.throws(() => klScales(full, reward, [true]), /must be a finite number ≥ 0/);
  }
});

test('takesRewardBeta: an undistilled answer, or one the judge approved, takes the reward β', () => {
  const cases: { distilled: boolean; approved: boolean; reward: boolean }[] = [
    { distilled: false, approved: true, reward: true }, // praised, trained by its reward
    { distilled: false, approved: false, reward: true }, // a complaint with no hint: its reward alone
    { distilled: true, approved: true, reward: true }, // praise that said what to keep: distilled, and anchored by the approval
    { distilled: true, approved: false, reward: false }, // a complaint's hint distilled: the full β
  ];
  for (const c of cases) assert.equal(takesRewardBeta(c), c.reward, JSON.stringify(c));
});
