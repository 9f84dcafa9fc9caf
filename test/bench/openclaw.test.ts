// Pure pieces of `bench openclaw` and the prefix-cache budget it relies on: the shared start of two
// prompts (what a cache hit leaves to prefill) and the default budget of paged caches, which must
// hold an OpenClaw-sized prompt of Qwen3-0.6B (112 KiB a position).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedPrefix } from '../../src/bench/openclaw.ts';
import { defaultPrefixCacheBytes, PREFIX_CACHE_MIB, PREFIX_CACHE_MIN_POSITIONS } from '../../src/engine/embedded/runtime.ts';

test('sharedPrefix: length of the common start', () => {
  const cases: [number[], number[], number][] = [
    [[], [], 0],
    [[], [1, 2], 0],
    [[1, 2, 3], [1, 2, 3], 3],
    [[1, 2, 3], [1, 2, 3, 4], 3],
    [[1, 2, 3, 4], [1, 2], 2],
    [[1, 9, 3], [1, 2, 3], 1],
    [[5], [6], 0],
  ];
  for (const [a, b, want] of cases) assert.equal(sharedPrefix(a, b), want, `${a} / ${b}`);
});

test('defaultPrefixCacheBytes: 1,024 MiB for arena caches, at least 32K positions for paged ones', () => {
  const MiB = 2 ** 20;
  const qwen06 = 28 * 8 * 128 * 2 * 2; // layers × KV heads × head dim × (K, V) × bf16
  const cases: [number | null, number][] = [
    [null, PREFIX_CACHE_MIB * MiB],
    [1024, PREFIX_CACHE_MIB * MiB], // small positions: the MiB default is larger
    [qwen06, 3584 * MiB],
  ];
  for (const [bpp, want] of cases) assert.equal(defaultPrefixCacheBytes(bpp), want, String(bpp));
  // the point of the rule: three 10K-token OpenClaw prompts fit the default for Qwen3-0.6B
  assert.ok(defaultPrefixCacheBytes(qwen06) >= 3 * 10_000 * qwen06);
  assert.equal(PREFIX_CACHE_MIN_POSITIONS, 32768);
});
