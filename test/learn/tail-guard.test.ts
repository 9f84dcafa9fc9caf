import { test } from 'node:test';
import assert from 'node:assert/strict';
import { guardTail } from '../../src/learn/tail-guard.ts';

test('guardTail: positive advantages of tokens sampled below the floor become 0; negative ones, and tokens at or above it, stay', () => {
  const ln = Math.log;
  const cases: { adv: number[]; lp: number[]; floor: number; want: number[]; zeroed: number }[] = [
    { adv: [1, 1, 1], lp: [ln(0.5), ln(0.001), ln(0.02)], floor: ln(0.01), want: [1, 0, 1], zeroed: 1 },
    { adv: [-1, -1], lp: [ln(0.001), ln(0.9)], floor: ln(0.01), want: [-1, -1], zeroed: 0 },
    { adv: [0.5, 0, -0.2], lp: [-9, -9, -9], floor: -3, want: [0, 0, -0.2], zeroed: 1 },
    { adv: [2], lp: [-3], floor: -3, want: [2], zeroed: 0 }, // at the floor is not below it
    { adv: [1, 1], lp: [-8], floor: -3, want: [0, 1], zeroed: 1 }, // a token without a recorded log-prob is left alone
    { adv: [], lp: [], floor: -1, want: [], zeroed: 0 },
  ];
  for (const c of cases) {
    const r = guardTail(c.adv, c.lp, c.floor);
    assert.deepEqual(r.advantages, c.want, JSON.stringify(c));
    assert.equal(r.zeroed, c.zeroed);
  }
});

test('guardTail: a floor that is not a negative log-prob is refused', () => {
  for (const f of [0, 1, Number.NaN]) assert.throws(() => guardTail([1], [-1], f), /floor is a log-prob below 0/);
});
