// bench load, briefly: a real serve child under a few concurrent streaming sessions with training on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchLoad, percentile } from '../../src/bench/load.ts';
import { STORIES } from '../helpers/models.ts';

test('percentile: nearest rank', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(xs, 50), 50);
  assert.equal(percentile(xs, 99), 99);
  assert.equal(percentile([5], 99), 5);
  assert.ok(Number.isNaN(percentile([], 50)));
});

test('bench load: 4 streaming sessions for 4 s against the real server (2 slots, the rest queued), no failed request, memory and latency reported', { timeout: 120_000 }, async () => {
  const r = await benchLoad({ model: STORIES, sessions: 4, seconds: 4, maxTokens: 8, serveArgs: ['--batch-size', '2', '--max-concurrent', '2'] });
  assert.equal(r.failed, 0, JSON.stringify(r.failures));
  assert.ok(r.requests >= 8, `${r.requests} requests`);
  assert.ok(r.latencyMs.p99 >= r.latencyMs.p50 && r.latencyMs.p50 > 0);
  assert.ok(r.rssMiB.max >= r.rssMiB.start && r.rssMiB.start > 10);
});
