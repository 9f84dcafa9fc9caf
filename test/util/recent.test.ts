// The recent-values window behind the judge-lag and staleness figures: nearest-rank quantiles over
// the kept values, and totals since the start that only go up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecentValues, nearestRank } from '../../src/util/recent.ts';

test('nearest-rank percentiles match hand-computed values', () => {
  const table: [number[], number, number][] = [
    [[], 50, NaN], [[7], 50, 7], [[7], 99, 7], [[1, 2, 3, 4], 50, 2], [[4, 3, 2, 1], 99, 4], [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90, 9], [[5, 1, 5, 1], 75, 5],
  ];
  for (const [xs, p, want] of table) assert.deepEqual(nearestRank(xs, p), want, `p${p} of ${JSON.stringify(xs)}`);
});

test('the window keeps the last N values in order; totals count every value ever added', () => {
  const w = new RecentValues(3);
  assert.equal(w.summary(), null);
  for (const x of [10, 20, 30, 40, 50]) w.add(x);
  assert.deepEqual(w.values(), [30, 40, 50]);
  const s = w.summary()!;
  assert.deepEqual([s.p50, s.p99, s.max, s.mean, s.window, s.count, s.sum], [40, 50, 50, 40, 3, 5, 150]);
});
