// The worker-backed EmbeddedEngine: streaming, batching of concurrent requests, abort, errors,
// and an event loop that stays free while tokens are produced.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { collect, type SampleParams } from '../../src/engine/types.ts';
import { STORIES } from '../helpers/models.ts';

const ref = JSON.parse(readFileSync(join(STORIES, 'reference.json'), 'utf8'));
let engine: EmbeddedEngine;
before(async () => { engine = await EmbeddedEngine.load(STORIES); });
after(async () => { await engine.close(); });

const greedy: SampleParams = { maxTokens: 200, temperature: 0, topP: 1, topK: 0, ignoreEos: true };

test('streams tokens one by one before the result, and the stream adds up to the result', async () => {
  const events = [];
  for await (const ev of engine.sample([1], greedy)) events.push(ev);
  const tokens = events.filter((e) => e.type === 'token');
  const done = events.at(-1)!;
  assert.equal(done.type, 'done');
  if (done.type !== 'done') return;
  assert.equal(tokens.length, 200);
  assert.deepEqual(done.result.ids, ref.greedy_from_bos.generated_ids);
  assert.deepEqual(tokens.map((t) => t.type === 'token' && t.token.id), done.result.ids);
  assert.equal(tokens.map((t) => (t.type === 'token' ? t.token.text : '')).join(''), done.result.text);
  assert.equal(done.result.promptTokens, 1);
  assert.equal(done.result.policyVersion, 0);
});

test('the event loop stays responsive while the engine generates (compute runs on the engine thread)', async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const r = await collect(engine.sample([1], { ...greedy, maxTokens: 400 }));
  clearInterval(timer);
  assert.equal(r.ids.length, 400);
  assert.ok(ticks >= 5, `the main thread's timer fired only ${ticks} times during generation`);
});

test('concurrent requests are batched and each gets the same tokens it would get alone (same seeds)', async () => {
  const prompts = [[1], engine.tokenizer.encode('Once upon a time'), engine.tokenizer.encode('The dog')];
  const params = (seed: number): SampleParams => ({ maxTokens: 40, temperature: 0.8, topP: 0.95, topK: 40, seed, ignoreEos: true });
  const alone = [];
  for (let i = 0; i < prompts.length; i++) alone.push(await collect(engine.sample(prompts[i], params(i))));
  const together = await Promise.all(prompts.map((p, i) => collect(engine.sample(p, params(i)))));
  for (let i = 0; i < prompts.length; i++) {
    assert.deepEqual(together[i].ids, alone[i].ids);
    for (let t = 0; t < alone[i].logprobs.length; t++) assert.ok(Math.abs(together[i].logprobs[t] - alone[i].logprobs[t]) < 1e-4);
  }
});

test('stop strings end generation; the text is cut before the stop string and the stream never shows it', async () => {
  let streamed = '';
  let result;
  for await (const ev of engine.sample([1], { ...greedy, stop: ['Lily'] })) {
    if (ev.type === 'token') streamed += ev.token.text; else result = ev.result;
  }
  assert.ok(result);
  assert.equal(result.finishReason, 'stop');
  assert.equal(result.stoppedBy, 'Lily');
  assert.equal(result.text, 'Once upon a time, there was a little girl named ');
  assert.equal(streamed, result.text);
});

test('aborting a generation ends it with finishReason abort, and other requests are unaffected', async () => {
  const ac = new AbortController();
  const other = collect(engine.sample([1], { ...greedy, maxTokens: 60 }));
  let n = 0, result;
  for await (const ev of engine.sample([1], { ...greedy, maxTokens: 500 }, ac.signal)) {
    if (ev.type === 'token' && ++n === 5) ac.abort();
    if (ev.type === 'done') result = ev.result;
  }
  assert.equal(result?.finishReason, 'abort');
  // how many tokens the engine makes before the abort reaches it depends on the machine's load: only that it stopped short
  assert.ok(result!.ids.length >= 5 && result!.ids.length < 500, `${result!.ids.length} tokens`);
  assert.equal((await other).ids.length, 60);
});

test('a prompt longer than the context is refused with context_length_exceeded; bad ids with bad_request', async () => {
  await assert.rejects(collect(engine.sample(new Array(600).fill(5), greedy)), (e: Error & { code: string }) => e.code === 'context_length_exceeded' && /600 tokens.*512/.test(e.message));
  await assert.rejects(collect(engine.sample([1, 99999], greedy)), (e: Error & { code: string }) => e.code === 'bad_request' && /99999/.test(e.message));
  await assert.rejects(collect(engine.sample([], greedy)), /no tokens/);
  // generation that reaches the context end stops with 'length': 500 + 12 fed positions fill the
  // 512-position cache, and the 13th token is sampled from that full context
  const r = await collect(engine.sample(new Array(500).fill(5), { ...greedy, maxTokens: 100 }));
  assert.equal(r.finishReason, 'length');
  assert.equal(r.ids.length, 13);
});

test('score returns per-token log-probs of exactly the given response ids, batched over requests', async () => {
  const prompt = engine.tokenizer.encode('Once upon a time');
  const r = await collect(engine.sample(prompt, { maxTokens: 20, temperature: 1, topP: 1, topK: 0, seed: 5, ignoreEos: true }));
  const [a, b, empty] = await engine.score([{ promptIds: prompt, responseIds: r.ids }, { promptIds: [1], responseIds: [403, 407] }, { promptIds: [1], responseIds: [] }]);
  for (let i = 0; i < r.ids.length; i++) assert.ok(Math.abs(a[i] - r.logprobs[i]) < 1e-5);
  assert.equal(b.length, 2);
  assert.equal(empty.length, 0);
  // 'Once' after BOS: log softmax of the reference logits (top logit 17.02 for id 403)
  assert.ok(b[0] < 0 && b[0] > -1);
});
