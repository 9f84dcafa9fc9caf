// The prefix cache and chunked prefill of the embedded engine: reused keys/values give the very
// log-probs a full recompute gives (sampling and scoring, before and after a publish), prompts fed
// in chunks give the log-probs of a one-shot prefill, entries are keyed by weights version, and
// the cache stays within its byte budget.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { Transformer } from '../../src/engine/embedded/model.ts';
import { PrefixCache } from '../../src/engine/embedded/prefix-cache.ts';
import { arenaKv, type ArenaKvCache } from '../../src/engine/embedded/kv-cache.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import { EngineError, type SampleParams } from '../../src/engine/types.ts';
import { STORIES, tempDir, tinyModel } from '../helpers/models.ts';
import { loadNativeAddon } from '../../src/engine/embedded/kernels/native.ts';
import type { RuntimeOptions } from '../../src/engine/embedded/runtime.ts';

const tmp = tempDir();
after(tmp.cleanup);
const params = (seed: number, maxTokens = 12): SampleParams => ({ maxTokens, temperature: 1, topP: 1, topK: 0, seed, ignoreEos: true });
const bits = (xs: ArrayLike<number>) => Array.from(Float32Array.from(xs));
/** Both ways of keeping KV: float32 in the arena, and bfloat16 pages (native attention where built, else the TypeScript reference). */
const KV_MODES: [string, RuntimeOptions][] = [
  ['f32 KV', { kvDtype: 'f32' }],
  ['bf16 paged KV', { kvDtype: 'bf16', ...(loadNativeAddon().addon ? { kernel: 'native' } : { kernel: 'ts' }) }],
];

/** A cache of `n` positions whose key/value floats encode (position, layer), to check copies. */
function filledCache(m: Transformer, n: number, tag = 0): ArenaKvCache {
  const c = m.newCache();
  c.reserve(n);
  for (let l = 0; l < m.cfg.numLayers; l++) for (let i = 0; i < n * m.kvDim; i++) { c.k[l][i] = tag + l * 1e4 + i; c.v[l][i] = -(tag + l * 1e4 + i); }
  c.length = n;
  return c;
}

test('PrefixCache: longest match per version, move on a near-full match, copy otherwise, LRU within the budget', () => {
  const m = Transformer.load(tinyModel(join(tmp.dir, 'unit'), tinyConfig('llama')), { kernel: 'ts' });
  const perEntry = m.newCache();
  perEntry.reserve(1);
  const entryBytes = perEntry.bytes; // a 64-position block: every entry here has that capacity
  perEntry.release();
  const pc = new PrefixCache(3 * entryBytes, () => m.newCache(), (c) => c.bytes);
  const a = Array.from({ length: 40 }, (_, i) => i + 1);
  pc.insert(1, a, filledCache(m, 40, 0));
  // another version never matches
  assert.equal(pc.take(2, a, 39), null);
  // scoring never moves: the same near-full match is copied and the entry stays
  const copied = pc.take(1, [...a.slice(0, 30), 999], 39, false)!;
  assert.equal(copied.length, 30);
  assert.equal(pc.stats().entries, 1, 'a copied entry stays');
  assert.equal(arenaKv(copied.cache).k[1][5], 1e4 + 5);
  copied.cache.release();
  // a match that cuts 10 of 40 positions off is within the move slack (16): moved
  const moved = pc.take(1, [...a.slice(0, 30), 999], 39)!;
  assert.equal(moved.length, 30);
  assert.equal(pc.stats().entries, 0, 'a moved entry leaves the cache');
  assert.equal(arenaKv(moved.cache).k[1][5], 1e4 + 5);
  // a long entry matched on a short prefix is copied, and stays
  const long = Array.from({ length: 120 }, (_, i) => (i * 7) % 500);
  pc.shrinkTo(0);
  const bigCache = filledCache(m, 120, 0.5);
  const big = new PrefixCache(10 * bigCache.bytes, () => m.newCache(), (c) => c.bytes);
  big.insert(0, long, bigCache);
  const copy = big.take(0, [...long.slice(0, 60), 1], 100)!;
  assert.equal(copy.length, 60);
  assert.notEqual(copy.cache, bigCache);
  assert.equal(copy.cache.length, 60);
  assert.equal(arenaKv(copy.cache).v[0][59 * m.kvDim + 3], -(0.5 + 59 * m.kvDim + 3));
  assert.equal(big.stats().entries, 1);
  copy.cache.release();
  // an entry that extends another replaces it
  big.insert(0, [...long, 5, 6], filledCache(m, 122));
  assert.equal(big.stats().entries, 1);
  assert.equal(big.stats().cachedTokens, 122);
  // LRU: a budget of three entries keeps the three most recently used
  moved.cache.release();
  for (let i = 0; i < 5; i++) pc.insert(0, [100 + i, 1, 2], filledCache(m, 3));
  const s = pc.stats();
  assert.equal(s.entries, 3);
  assert.ok(s.bytes <= s.budgetBytes);
  assert.equal(pc.take(0, [100, 1, 2, 3], 3), null, 'the oldest were evicted');
  assert.equal(pc.take(0, [104, 1, 2, 3], 3)!.length, 3);
  pc.dropVersion(0);
  assert.equal(pc.stats().entries, 0);
});

for (const [mode, kv] of KV_MODES) test(`${mode}: sampling with the prefix cache gives bit-identical tokens and log-probs to a full recompute, turn after turn and across a publish`, async () => {
  const cached = new EmbeddedRuntime(STORIES, kv);
  const plain = new EmbeddedRuntime(STORIES, { ...kv, prefixCacheMiB: 0 });
  assert.equal(cached.stats().kvDtype, kv.kvDtype);
  try {
    const tok = cached.tokenizer;
    let prompt = tok.encode('Once upon a time there was a little girl named Lily. She loved to play in the park with her friends.');
    const turn = (seed: number) => {
      const a = cached.generate(prompt, params(seed));
      const b = plain.generate(prompt, params(seed));
      assert.deepEqual(a.ids, b.ids);
      assert.deepEqual(bits(a.logprobs), bits(b.logprobs));
      assert.equal(a.policyVersion, b.policyVersion);
      return a;
    };
    for (let t = 0; t < 3; t++) {
      const r = turn(10 + t);
      prompt = [...prompt, ...r.ids, ...tok.encode(' Then she said hello.')];
    }
    const st = cached.stats().prefixCache;
    assert.equal(st.hits, 2, 'turns 2 and 3 start from the previous turn');
    assert.ok(st.reusedTokens > prompt.length / 2, `reused ${st.reusedTokens} positions`);
    assert.equal(plain.stats().prefixCache.hits, 0);

    // scoring the last prompt with a response, with and without the cache, and against sampling
    const r = cached.generate(prompt, params(20));
    const [sc] = cached.score([{ promptIds: prompt, responseIds: r.ids }]);
    const [sp] = plain.score([{ promptIds: prompt, responseIds: r.ids }]);
    assert.deepEqual(Array.from(sc), Array.from(sp));
    assert.deepEqual(Array.from(sc), bits(r.logprobs));

    // a published adapter (trained one step so its keys/values differ) never reuses version-0 KV
    for (const rt of [cached, plain]) {
      rt.configureTraining({ rank: 4, alpha: 8, seed: 3 });
      rt.forwardBackward([{ promptIds: prompt.slice(0, 8), responseIds: prompt.slice(8, 20) }], { kind: 'cross_entropy' });
      rt.optimStep({ learningRate: 5e-2 });
      rt.publish(rt.saveWeights());
    }
    const hitsBefore = cached.stats().prefixCache.hits;
    const v1 = turn(30);
    assert.equal(v1.policyVersion, 1);
    assert.equal(cached.stats().prefixCache.hits, hitsBefore, 'version 1 found nothing of version 0');
    const base0 = plain.generate(prompt, { ...params(30), weights: 'base' });
    assert.notDeepEqual(bits(base0.logprobs), bits(v1.logprobs), 'the adapter changes the numbers');
    // the base weights keep their own entries: a base request still hits and still agrees
    const baseCached = cached.generate(prompt, { ...params(30), weights: 'base' });
    assert.equal(cached.stats().prefixCache.hits, hitsBefore + 1);
    assert.deepEqual(bits(baseCached.logprobs), bits(base0.logprobs));
    // scoring under version 1 and under the base, cached or not
    for (const adapter of ['published', 'base'] as const) {
      const [x] = cached.score([{ promptIds: prompt, responseIds: v1.ids }], { adapter });
      const [y] = plain.score([{ promptIds: prompt, responseIds: v1.ids }], { adapter });
      assert.deepEqual(Array.from(x), Array.from(y), adapter);
    }
  } finally {
    await cached.close();
    await plain.close();
  }
});

for (const [mode, kv] of KV_MODES) test(`${mode}: a prompt fed in small chunks while another sequence decodes gives the log-probs of a one-shot prefill`, async () => {
  const chunked = new EmbeddedRuntime(STORIES, { ...kv, prefixCacheMiB: 0, prefillChunk: 5 });
  const oneShot = new EmbeddedRuntime(STORIES, { ...kv, prefixCacheMiB: 0 });
  try {
    const tok = chunked.tokenizer;
    const long = tok.encode('The sun was shining and the birds were singing. Tom took his red ball and ran to the big tree where his friend Sam was waiting for him.');
    const short = tok.encode('Once upon a time');
    const expectLong = oneShot.generate(long, params(1, 16));
    const expectShort = oneShot.generate(short, params(2, 40));
    // the short one decodes while the long one is fed 5 tokens per step
    const kShort = chunked.add(short, params(2, 40));
    chunked.step();
    const kLong = chunked.add(long, params(1, 16));
    const results = new Map<number, { ids: number[]; logprobs: number[] }>();
    let stepsWithBoth = 0;
    while (results.size < 2) {
      const out = chunked.step();
      if (out.some((o) => o.key === kShort && o.token) && !out.some((o) => o.key === kLong && o.token) && !results.has(kLong)) stepsWithBoth++;
      for (const o of out) if (o.result) results.set(o.key, o.result);
    }
    assert.ok(stepsWithBoth >= Math.floor(long.length / 5) - 1, `the short sequence decoded during the long prefill (${stepsWithBoth} steps)`);
    assert.deepEqual(results.get(kLong)!.ids, expectLong.ids);
    assert.deepEqual(bits(results.get(kLong)!.logprobs), bits(expectLong.logprobs));
    assert.deepEqual(bits(results.get(kShort)!.logprobs), bits(expectShort.logprobs));
    // scoring in passes of 5 rows agrees with scoring in one pass
    const req = [{ promptIds: long, responseIds: expectLong.ids }, { promptIds: short, responseIds: expectShort.ids }];
    const a = chunked.score(req), b = oneShot.score(req);
    assert.deepEqual(a.map((x) => Array.from(x)), b.map((x) => Array.from(x)));
    assert.deepEqual(Array.from(a[0]), bits(expectLong.logprobs));
  } finally {
    await chunked.close();
    await oneShot.close();
  }
});

for (const [mode, kv] of KV_MODES) test(`${mode}: the context shrinks to what fits, longer prompts get context_length_exceeded before any token, and requests wait for memory instead of failing`, async () => {
  const probe = new EmbeddedRuntime(STORIES, { prefixCacheMiB: 0 });
  const perPosition = probe.model.cfg.numLayers * 2 * probe.model.kvDim * (kv.kvDtype === 'bf16' ? 2 : 4);
  await probe.close();
  // room for 256 positions of KV
  const rt = new EmbeddedRuntime(STORIES, { ...kv, kvMemoryMiB: (256 * perPosition) / 2 ** 20, prefixCacheMiB: 1 });
  try {
    assert.equal(rt.stats().kvDtype, kv.kvDtype);
    assert.equal(rt.info.contextLength, 256);
    assert.throws(() => rt.add(Array(300).fill(5), params(1)), (e: EngineError) => e.code === 'context_length_exceeded' && /fit/.test(e.message));
    // two requests that plan 128 positions each fit together; a third waits for one to finish
    const prompt = rt.tokenizer.encode('Once upon a time');
    const keys = [1, 2, 3].map((s) => rt.add(prompt, params(s, 100)));
    const first = rt.step();
    assert.equal(new Set(first.filter((o) => o.token).map((o) => o.key)).size, 2, 'two run, one waits');
    const done = new Set<number>();
    while (done.size < 3) for (const o of rt.step()) if (o.result) { assert.equal(o.result.finishReason, 'length'); done.add(o.key); }
    assert.deepEqual([...done].sort(), keys);
    const st = rt.stats();
    assert.ok(st.prefixCache.bytes <= st.prefixCache.budgetBytes);
  } finally {
    await rt.close();
  }
});

for (const [mode, kv] of KV_MODES) test(`${mode}: fifty sessions with different system prompts keep the prefix cache within its budget`, async () => {
  const rt = new EmbeddedRuntime(STORIES, { ...kv, prefixCacheMiB: 1 });
  try {
    const tok = rt.tokenizer;
    let peak = 0;
    for (let s = 0; s < 50; s++) {
      const system = tok.encode(`Session ${s}: the story of a ${['cat', 'dog', 'bird', 'fish', 'frog'][s % 5]} named ${'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[s % 26]}${s} who lived by the sea.`);
      const r = rt.generate(system, params(s, 8));
      rt.generate([...system, ...r.ids], params(s + 100, 8));
      peak = Math.max(peak, rt.stats().prefixCache.bytes);
    }
    const st = rt.stats().prefixCache;
    assert.ok(peak <= st.budgetBytes, `peak ${peak} > budget ${st.budgetBytes}`);
    assert.ok(st.evictions > 0, 'the budget forced evictions');
    assert.ok(st.hits >= 50, 'every second turn reused its first');
  } finally {
    await rt.close();
  }
});

test('through the engine thread: a scoring job reuses the sampled turn, and stats() and the /metrics lines report the cache', async () => {
  const { EmbeddedEngine, engineStatsMetrics } = await import('../../src/engine/embedded/engine.ts');
  const engine = await EmbeddedEngine.load(STORIES, { prefillChunk: 8 });
  try {
    const prompt = engine.tokenizer.encode('Once upon a time there was a big red dog who liked to run in the garden.');
    const ids: number[] = [];
    const logprobs: number[] = [];
    for await (const ev of engine.sample(prompt, params(4, 10))) if (ev.type === 'token') { ids.push(ev.token.id); logprobs.push(ev.token.logprob); }
    const [scored] = await engine.score([{ promptIds: prompt, responseIds: ids }]);
    assert.deepEqual(Array.from(scored), bits(logprobs));
    const st = await engine.stats();
    assert.equal(st.prefixCache.hits, 1);
    assert.equal(st.prefixCache.reusedTokens, prompt.length - 1);
    assert.ok(st.prefixCache.bytes > 0 && st.prefixCache.bytes <= st.prefixCache.budgetBytes);
    const text = engineStatsMetrics(st);
    assert.match(text, /^openclaw_rl_prefix_cache_hits_total 1$/m);
    assert.match(text, new RegExp(`^openclaw_rl_prefix_cache_reused_tokens_total ${prompt.length - 1}$`, 'm'));
    assert.match(text, /^# TYPE openclaw_rl_prefix_cache_bytes gauge$/m);
  } finally {
    await engine.close();
  }
});

test('the KL term reads the base model through the prefix cache: the same loss, KL and gradients bit for bit, and the shared prompt is a hit', async () => {
  const cached = new EmbeddedRuntime(STORIES, {});
  const plain = new EmbeddedRuntime(STORIES, { prefixCacheMiB: 0 });
  try {
    const tok = cached.tokenizer;
    const system = tok.encode('Once upon a time there was a little girl named Lily. She loved to play in the park with her friends.');
    const answers = ['One day she saw a dog.', 'She ran home to her mom.', 'The sun was hot and big.', 'Tom gave her a red ball.'];
    const data = (step: number) => answers.map((a, i) => {
      const responseIds = tok.encode(` ${a} Step ${step}.`, false);
      return { promptIds: [...system, ...tok.encode(` ${i}`, false)], responseIds, behaviourLogprobs: responseIds.map(() => -1), advantages: responseIds.map((_, t) => (i % 2 ? 1 : -1) * (1 + t / 10)), temperature: 0.9 + (i % 2) * 0.1 };
    });
    for (const rt of [cached, plain]) rt.configureTraining({ rank: 4, alpha: 8, seed: 5 });
    for (let step = 0; step < 3; step++) {
      const m = [cached, plain].map((rt) => { const x = rt.forwardBackward(data(step), { kind: 'ppo', klCoef: 0.3 }); rt.optimStep({ learningRate: 5e-2 }); return x; });
      assert.deepEqual(m[0], m[1], `step ${step}`);
      if (step > 0) assert.ok((m[0].kl ?? 0) > 0, `the policy moved: KL ${m[0].kl}`);
    }
    assert.ok(cached.stats().prefixCache.hits >= 4, `hits ${cached.stats().prefixCache.hits}: later data found the shared prompt's base KV`);
    assert.equal(plain.stats().prefixCache.hits, 0);
    const [a, b] = [cached, plain].map((rt) => rt.score(data(9), { adapter: 'current' }));
    a.forEach((x, i) => assert.deepEqual(Array.from(x), Array.from(b[i])), 'the trained weights agree');
  } finally {
    await cached.close();
    await plain.close();
  }
});
