// Malformed requests: each gets the right status and an OpenAI-shaped error naming the problem,
// the server keeps serving, and nothing half-written reaches the store.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => { s = await startTestServer({ maxBodyBytes: 64 * 1024 }); });
after(async () => { await s.close(); });

const ok = { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 4 };

const CASES: [string, unknown, number, RegExp, string | null][] = [
  ['malformed JSON', '{"model": "stories", "messages": [', 400, /not valid JSON/, null],
  ['body is not an object', '[1, 2, 3]', 400, /must be a JSON object/, null],
  ['missing model', { messages: ok.messages }, 400, /'model' is required/, 'model'],
  ['unknown model', { ...ok, model: 'gpt-9' }, 404, /the model 'gpt-9' does not exist: this server serves 'stories'/, 'model'],
  ['missing messages', { model: 'stories' }, 400, /'messages' is required and must be an array/, 'messages'],
  ['empty messages', { ...ok, messages: [] }, 400, /at least one message/, 'messages'],
  ['messages not an array', { ...ok, messages: 'hello' }, 400, /must be an array/, 'messages'],
  ['bad role', { ...ok, messages: [{ role: 'robot', content: 'hi' }] }, 400, /messages\[0\]\.role must be one of/, 'messages[0].role'],
  ['content of the wrong type', { ...ok, messages: [{ role: 'user', content: 42 }] }, 400, /must be a string or an array of content parts/, 'messages[0].content'],
  ['missing content', { ...ok, messages: [{ role: 'user' }] }, 400, /messages\[0\]\.content is missing/, 'messages[0].content'],
  ['image content', { ...ok, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 400, /accepts text only/, 'messages[0].content[0].type'],
  ['temperature out of range', { ...ok, temperature: 5 }, 400, /'temperature' must be a number from 0 to 2/, 'temperature'],
  ['temperature as a string', { ...ok, temperature: 'hot' }, 400, /'temperature' must be/, 'temperature'],
  ['top_p zero', { ...ok, top_p: 0 }, 400, /'top_p' must be a number in \(0, 1\]/, 'top_p'],
  ['max_tokens negative', { ...ok, max_tokens: -3 }, 400, /'max_tokens' must be a positive integer/, 'max_tokens'],
  ['max_completion_tokens fractional', { ...ok, max_completion_tokens: 2.5 }, 400, /'max_completion_tokens' must be a positive integer/, 'max_completion_tokens'],
  ['n = 0', { ...ok, n: 0 }, 400, /'n' must be an integer from 1 to 16/, 'n'],
  ['n too large', { ...ok, n: 17 }, 400, /'n' must be an integer from 1 to 16/, 'n'],
  ['stop of the wrong type', { ...ok, stop: 7 }, 400, /'stop' must be a string or an array/, 'stop'],
  ['too many stops', { ...ok, stop: ['a', 'b', 'c', 'd', 'e'] }, 400, /at most 4 strings/, 'stop'],
  ['stream not a boolean', { ...ok, stream: 'yes' }, 400, /'stream' must be a boolean/, 'stream'],
  ['tools malformed', { ...ok, tools: [{ type: 'function' }] }, 400, /tools\[0\] must be/, 'tools[0]'],
  ['top_logprobs without logprobs', { ...ok, top_logprobs: 3 }, 400, /needs 'logprobs': true/, 'top_logprobs'],
  ['context too long', { ...ok, messages: [{ role: 'user', content: 'word '.repeat(700) }] }, 400, /maximum context length is 512 tokens, but the messages are \d+ tokens/, 'messages'],
  ['body too large', { ...ok, messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] }, 413, /limit of 65536 bytes|the limit is 65536/, null],
];

for (const [name, body, status, message, param] of CASES) {
  test(`bad input: ${name} → ${status}`, async () => {
    const r = await post(`${s.url}/v1/chat/completions`, body);
    assert.equal(r.status, status, r.text);
    assert.ok(r.json?.error, `an OpenAI-style error body: ${r.text}`);
    assert.match(r.json.error.message, message);
    assert.equal(typeof r.json.error.type, 'string');
    assert.equal(r.json.error.param, param);
    if (name === 'context too long') assert.equal(r.json.error.code, 'context_length_exceeded');
  });
}

test('after all of that the server still serves, and no malformed request left a record', async () => {
  const turnsBefore = s.store.turns().length;
  const r = await post(`${s.url}/v1/chat/completions`, ok);
  assert.equal(r.status, 200);
  assert.equal(r.json.choices[0].message.role, 'assistant');
  assert.equal(s.store.turns().length, turnsBefore + 1);
  assert.equal(turnsBefore, 0);
  const wrongMethod = await fetch(`${s.url}/v1/chat/completions`);
  assert.equal(wrongMethod.status, 405);
  const unknown = await fetch(`${s.url}/v2/nothing`);
  assert.equal(unknown.status, 404);
  assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /no route for GET \/v2\/nothing/);
});
