// The weights guard's verdicts, table by table: update size and finiteness, the canary, learning rates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { updateVerdict, accumulateUpdate, canaryVerdict, learningRateProblem, UNIFORM_MARGIN } from '../../src/learn/weights-guard.ts';

test('update verdict: finite updates up to the limit pass; non-finite or oversized ones are refused', () => {
  const cases: [{ finite: boolean; normSqBefore: number; deltaNormSq: number }, RegExp | null][] = [
    [{ finite: true, normSqBefore: 100, deltaNormSq: 1 }, null], // 0.1× the norm
    [{ finite: true, normSqBefore: 100, deltaNormSq: 400 }, null], // exactly 2×
    [{ finite: true, normSqBefore: 100, deltaNormSq: 401 }, /moved the weights by 2\.00× their norm/],
    [{ finite: true, normSqBefore: 0, deltaNormSq: 1 }, null], // a fresh adapter: the floor of 1 applies
    [{ finite: true, normSqBefore: 0, deltaNormSq: 9 }, /3\.00×/],
    [{ finite: false, normSqBefore: 1, deltaNormSq: 0 }, /non-finite/],
    [{ finite: true, normSqBefore: 1, deltaNormSq: Infinity }, /non-finite/],
  ];
  for (const [stats, expected] of cases) {
    const v = updateVerdict(stats);
    if (expected) assert.match(v ?? '', expected, JSON.stringify(stats)); else assert.equal(v, null, JSON.stringify(stats));
  }
});

test('accumulateUpdate sums the norms of the old weights and of the change, and notices non-finite values', () => {
  const s = { finite: true, normSqBefore: 0, deltaNormSq: 0 };
  accumulateUpdate(s, Float32Array.of(3, 4), Float32Array.of(3, 5));
  assert.deepEqual(s, { finite: true, normSqBefore: 25, deltaNormSq: 1 });
  accumulateUpdate(s, Float32Array.of(1), Float32Array.of(NaN));
  assert.equal(s.finite, false);
});

test('canary verdict: gradual learning passes; non-finite, saturated or collapsing log-probs are refused', () => {
  const V = 512, uniform = -Math.log(V);
  const last = [[-1, -2], [-1.5]];
  const cases: [number[][], RegExp | null][] = [
    [[[-1.2, -2.1], [-1.4]], null],
    [[[-0.5, -1], [-1]], null], // rose
    [[[-5, -6], [-5.5]], null], // fell by 4 nats: the limit
    [[[-6, -6], [-6]], /fell by 4\.50 nats per token in one step/],
    [[[NaN, -1], [-1]], /not a finite log-probability/],
    [[[-Infinity, -1], [-1]], /not a finite/],
    [[[0.5, -1], [-1]], /not a finite log-probability/], // a log-prob above 0 is not one
  ];
  for (const [next, expected] of cases) {
    const v = canaryVerdict(next, last, V).reason;
    if (expected) assert.match(v ?? '', expected, JSON.stringify(next)); else assert.equal(v, null, JSON.stringify(next));
  }
  // far below a uniform guess after falling: broken, even in small steps
  const low = uniform - UNIFORM_MARGIN - 0.5;
  assert.match(canaryVerdict([[low, low], [low]], [[low + 1, low + 1], [low + 1]], V).reason ?? '', /well below a uniform guess/);
  // without a last version only finiteness is checked
  assert.equal(canaryVerdict([[-50]], null, V).reason, null);
});

test('learning rates: positive, finite and at most 0.1', () => {
  for (const ok of [1e-5, 1e-3, 0.1]) assert.equal(learningRateProblem(ok), null);
  for (const bad of [0, -1, NaN, Infinity, 1e30, 0.5]) assert.ok(learningRateProblem(bad), String(bad));
  assert.match(learningRateProblem(1e30)!, /destroys the weights/);
});
