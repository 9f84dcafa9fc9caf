// The recent-rewards baseline: hand-computed means over the batch and the rewards before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { windowBaseline, liftBaseline } from '../../src/learn/baseline.ts';

test('the baseline is the mean of the batch and the newest earlier rewards, up to the window', () => {
  const table: [number[], number[], number, number][] = [
    // batch, earlier (newest first), window, expected
    [[], [], 64, 0],
    [[1, -1], [], 64, 0],
    [[-1, -1, -1, -1], [], 64, -1],
    [[-1, -1], [1, 1, -1, -1], 4, 0],
    [[-1, -1], [1, 1, -1, -1], 6, -2 / 6],
    [[-1, -1, -1, -1], [1, 1, 1, 1], 8, 0],
    [[-1, -1, -1, -1], [1, 1, 1, 1], 6, (-4 + 2) / 6],
    [[1, 1, 1], [-1], 2, 1],
  ];
  for (const [batch, earlier, window, want] of table) assert.equal(windowBaseline(batch, earlier, window), want, `${JSON.stringify(batch)} after ${JSON.stringify(earlier)}, window ${window}`);
});

test('a uniform batch of failures after a mixed history keeps a (mild) negative advantage instead of none', () => {
  const batch = Array(8).fill(-1);
  const earlier = [1, -1, -1, -1, -1, -1, -1, -1, 1, -1, -1, -1, -1, -1, -1, -1];
  const b = windowBaseline(batch, earlier, 64);
  assert.ok(b > -1 && b < -0.7, `baseline ${b}`);
  assert.ok(-1 - b < 0, 'failures are still pushed down');
  assert.ok(1 - b > 1.7, 'a success would be pushed up hard');
});

test('the lifting baseline is the window mean while it is negative, else zero', () => {
  const table: [number[], number[], number, number][] = [
    // batch, earlier (newest first), window, expected
    [[], [], 64, 0],
    [[-1, -1, -1, -1], [], 64, -1],
    [[-1, -1], [1, 1, -1, -1], 6, -2 / 6],
    [[1, -1], [], 64, 0],
    [[1, 1, 1, 1], [1, 1, 1, -1], 8, 0],
    [[1, 1, 1], [-1], 2, 0],
  ];
  for (const [batch, earlier, window, want] of table) assert.equal(liftBaseline(batch, earlier, window), want, `${JSON.stringify(batch)} after ${JSON.stringify(earlier)}, window ${window}`);
});

test('once the model mostly pleases, a success keeps its whole reward under the lifting baseline', () => {
  const batch = [1, 1, 1, 1, 1, 1, 1, -1];
  const earlier = Array(56).fill(1);
  assert.ok(1 - windowBaseline(batch, earlier, 64) < 0.05, 'the recent mean leaves a success almost nothing');
  assert.equal(1 - liftBaseline(batch, earlier, 64), 1);
  assert.equal(-1 - liftBaseline(batch, earlier, 64), -1);
});
