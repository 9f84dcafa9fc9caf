// POST /v1/completions on the real stories260K weights: text or token-id prompts, greedy and seeded sampling,
// legacy log-probs, echo (with the prompt's scored log-probs), streaming, stop strings, clean 4xx, and the
// side turn recorded token-exactly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { STORIES } from '../helpers/models.ts';

const ref = JSON.parse(readFileSync(join(STORIES, 'reference.json'), 'utf8'));
let s: TestServer;
before(async () => { s = await startTestServer(); });
after(() => s.close());
const complete = (body: Record<string, unknown>, headers: Record<string, string> = {}) => post(`${s.url}/v1/completions`, { model: 'stories', ...body }, headers);

test('greedy completion of a text prompt and of the same prompt as token ids: the reference ids, recorded as a side turn', async () => {
  const byText = await complete({ prompt: '', max_tokens: 12, temperature: 0 }, { 'x-session-id': 'cmpl-text' });
  assert.equal(byText.status, 200, byText.text);
  assert.equal(byText.json.object, 'text_completion');
  assert.equal(byText.json.choices[0].finish_reason, 'length');
  assert.deepEqual(byText.json.usage, { prompt_tokens: 1, completion_tokens: 12, total_tokens: 13 });
  assert.ok(ref.greedy_from_bos.text.startsWith(byText.json.choices[0].text), byText.json.choices[0].text);
  const byIds = await complete({ prompt: [1], max_tokens: 12, temperature: 0 }, { 'x-session-id': 'cmpl-ids' });
  assert.equal(byIds.json.choices[0].text, byText.json.choices[0].text);
  const [turn] = s.store.turns('cmpl-ids');
  assert.deepEqual([turn.turn_type, turn.status, turn.next_state_status], ['side', 'complete', 'none']);
  assert.deepEqual(JSON.parse(turn.prompt_ids), [1]);
  assert.deepEqual(JSON.parse(turn.response_ids), ref.greedy_from_bos.generated_ids.slice(0, 12));
  assert.equal(JSON.parse(turn.request_json).endpoint, 'completions');
});

test('logprobs: the chosen token and the n likeliest per position, matching the recorded sampling log-probs', async () => {
  const r = await complete({ prompt: 'Once upon a time', max_tokens: 8, logprobs: 3, seed: 5 }, { 'x-session-id': 'cmpl-lp' });
  assert.equal(r.status, 200, r.text);
  const lp = r.json.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.json.usage.completion_tokens);
  assert.equal(lp.tokens.join(''), r.json.choices[0].text);
  assert.deepEqual(lp.token_logprobs, JSON.parse(s.store.turns('cmpl-lp')[0].response_logprobs));
  assert.ok(lp.top_logprobs.every((t: Record<string, number>) => Object.keys(t).length >= 1 && Object.keys(t).length <= 3));
  assert.ok(lp.text_offset.every((o: number, i: number) => i === 0 || o >= lp.text_offset[i - 1]));
});

test('echo: the prompt comes first, its first token without a log-prob and the others scored', async () => {
  const r = await complete({ prompt: 'Once upon a time', max_tokens: 4, echo: true, logprobs: 0, temperature: 0 });
  const c = r.json.choices[0];
  assert.ok(c.text.startsWith('Once upon a time'));
  assert.equal(c.logprobs.tokens.length, r.json.usage.prompt_tokens + r.json.usage.completion_tokens);
  assert.equal(c.logprobs.token_logprobs[0], null);
  assert.ok(c.logprobs.token_logprobs.slice(1).every((x: number) => Number.isFinite(x) && x <= 0));
});

test('streaming gives the same text as a seeded non-streamed request, then the finish reason and usage', async () => {
  const body = { prompt: 'Once upon a time', max_tokens: 10, seed: 11, temperature: 1 };
  const whole = await complete(body);
  const streamed = await complete({ ...body, stream: true, stream_options: { include_usage: true } });
  const chunks = streamed.text.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
  assert.equal(chunks.filter((c) => c.choices.length).map((c) => c.choices[0].text).join(''), whole.json.choices[0].text);
  assert.equal(chunks.filter((c) => c.choices.length).at(-1).choices[0].finish_reason, whole.json.choices[0].finish_reason);
  assert.deepEqual(chunks.at(-1).usage, whole.json.usage);
  assert.ok(streamed.text.trimEnd().endsWith('data: [DONE]'));
});

test('a stop string ends the completion before it', async () => {
  const r = await complete({ prompt: 'Once upon a time', max_tokens: 60, stop: ['.'], temperature: 0 });
  assert.equal(r.json.choices[0].finish_reason, 'stop');
  assert.ok(!r.json.choices[0].text.includes('.'));
});

test('bad requests are 4xx naming the parameter', async () => {
  const table: [Record<string, unknown>, number, string, RegExp][] = [
    [{}, 400, 'prompt', /'prompt' is required/],
    [{ prompt: [1, 99999] }, 400, 'prompt', /token id 99999 in 'prompt' is outside the vocabulary/],
    [{ prompt: [] }, 400, 'prompt', /at least one token id/],
    [{ prompt: ['a', 'b'] }, 400, 'prompt', /one prompt per request/],
    [{ prompt: 'x', n: 2 }, 400, 'n', /'n' must be 1/],
    [{ prompt: 'x', suffix: 'y' }, 400, 'suffix', /not supported/],
    [{ prompt: 'x', max_tokens: 0 }, 400, 'max_tokens', /positive integer/],
    [{ prompt: 'x', logprobs: 21 }, 400, 'logprobs', /from 0 to 20/],
    [{ prompt: 'x', echo: 'yes' }, 400, 'echo', /boolean/],
    [{ prompt: 'x', model: 'gpt-4' }, 404, 'model', /does not exist/],
  ];
  for (const [body, status, param, re] of table) {
    const r = await complete(body);
    assert.equal(r.status, status, JSON.stringify(body));
    assert.equal(r.json.error.param, param);
    assert.match(r.json.error.message, re);
  }
});
