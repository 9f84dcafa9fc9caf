// The likelihood guard's math: the floor from the base's own answers (none until enough were seen, fixed once
// calibration ends) and the verdict on an answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LikelihoodFloor, unlikely, LIKELIHOOD_FLOOR_DEFAULTS } from '../../src/learn/likelihood-guard.ts';

test('no floor until minSamples base answers, then their p-quantile', () => {
  const f = new LikelihoodFloor({ percentile: 0.25, minSamples: 5, maxSamples: 8 });
  for (const m of [-1.0, -0.6, -0.8, -1.4]) f.add(m);
  assert.equal(f.floor, null, '4 of 5');
  f.add(-0.2);
  // sorted −1.4 −1.0 −0.8 −0.6 −0.2: position 0.25·4 = 1 → −1.0
  assert.equal(f.floor, -1.0);
  f.add(-2.0);
  // sorted −2.0 −1.4 −1.0 −0.8 −0.6 −0.2: position 1.25 → −1.4 + 0.25·0.4 = −1.3
  assert.ok(Math.abs(f.floor! - -1.3) < 1e-12, String(f.floor));
});

test('calibration stops at maxSamples: later answers do not move the floor', () => {
  const f = new LikelihoodFloor({ percentile: 0, minSamples: 2, maxSamples: 3 });
  for (const m of [-1, -2, -3]) f.add(m);
  assert.equal(f.calibrating, false);
  f.add(-10);
  assert.deepEqual([f.samples, f.floor], [3, -3]);
});

test('an empty base answer (−∞) and NaN are left out of the floor', () => {
  const f = new LikelihoodFloor({ percentile: 0, minSamples: 2, maxSamples: 4 });
  f.add(-Infinity); f.add(Number.NaN); f.add(-1);
  assert.deepEqual([f.samples, f.floor], [1, null]);
  f.add(-0.5);
  assert.equal(f.floor, -1);
});

test('an answer is unlikely only below an existing floor', () => {
  const table: [number, number | null, boolean][] = [
    [-1.5, -1.2, true], [-1.2, -1.2, false], [-0.4, -1.2, false], [-Infinity, -1.2, true], [-9, null, false],
  ];
  for (const [mean, floor, want] of table) assert.equal(unlikely(mean, floor), want, `${mean} vs ${floor}`);
});

test('bad settings are refused', () => {
  assert.throws(() => new LikelihoodFloor({ ...LIKELIHOOD_FLOOR_DEFAULTS, percentile: 1.5 }), /percentile/);
  assert.throws(() => new LikelihoodFloor({ ...LIKELIHOOD_FLOOR_DEFAULTS, minSamples: 10, maxSamples: 5 }), /minSamples/);
  assert.deepEqual(LIKELIHOOD_FLOOR_DEFAULTS, { percentile: 0.05, minSamples: 24, maxSamples: 64 });
});
