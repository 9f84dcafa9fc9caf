// n > 1 in /v1/chat/completions: n choices for one prompt, each sampled and recorded as its own turn
// (the same prompt ids, its own ids and log-probs), streamed with choice indexes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => { s = await startTestServer(); });
after(async () => { await s.close(); });

const messages = [{ role: 'user', content: 'Once upon a time' }];

test('n = 3 returns three choices, each recorded as its own turn with the same prompt ids and its own exact ids', async () => {
  const r = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 12, n: 3, seed: 5, logprobs: true }, { 'x-session-id': 'n3' });
  assert.equal(r.status, 200);
  const choices = r.json.choices as { index: number; message: { content: string }; logprobs: { content: { logprob: number }[] } }[];
  assert.deepEqual(choices.map((c) => c.index), [0, 1, 2]);
  const turns = s.store.turns('n3');
  assert.equal(turns.length, 3);
  assert.ok(turns.every((t) => t.prompt_ids === turns[0].prompt_ids && t.status === 'complete'));
  const completion = turns.reduce((a, t) => a + JSON.parse(t.response_ids).length, 0);
  assert.equal(r.json.usage.completion_tokens, completion);
  for (const [i, t] of turns.entries()) {
    assert.equal(JSON.parse(t.request_json).choice, i);
    assert.equal(s.engine.tokenizer.decode(JSON.parse(t.response_ids)), choices[i].message.content);
    assert.deepEqual(choices[i].logprobs.content.map((x) => x.logprob), JSON.parse(t.response_logprobs));
  }
  assert.ok(new Set(choices.map((c) => c.message.content)).size > 1, 'the choices are sampled independently');
});

test('with a seed, choice i of an n-request equals a single request with seed + i', async () => {
  const group = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 10, n: 2, seed: 40, temperature: 1 });
  for (const i of [0, 1]) {
    const one = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 10, seed: 40 + i, temperature: 1 });
    assert.equal(group.json.choices[i].message.content, one.json.choices[0].message.content);
  }
});

test('streaming n = 2 interleaves chunks by choice index, each choice ends with its own finish reason, usage counts all', async () => {
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none' });
  const stream = await client.chat.completions.create({ model: 'stories', messages: messages as never, max_tokens: 16, n: 2, stream: true, stream_options: { include_usage: true }, seed: 3 });
  const text = ['', ''];
  const finish: (string | null)[] = [null, null];
  let usage: { completion_tokens: number } | undefined;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text[ch.index] += ch.delta.content ?? '';
      if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
    }
  }
  assert.ok(finish.every((f) => f === 'length' || f === 'stop'));
  const nonStream = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 16, n: 2, seed: 3 });
  assert.deepEqual(text, nonStream.json.choices.map((c: { message: { content: string } }) => c.message.content));
  assert.equal(usage!.completion_tokens, nonStream.json.usage.completion_tokens);
});

test('n beyond the concurrency limit is refused with 429, n out of range with 400', async () => {
  const small = await startTestServer({ maxConcurrent: 2 });
  try {
    const r = await post(`${small.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 4, n: 3 });
    assert.equal(r.status, 429);
    assert.equal((await post(`${small.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 4, n: 99 })).status, 400);
    assert.equal((await post(`${small.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 4, n: 2 })).status, 200);
  } finally { await small.close(); }
});
