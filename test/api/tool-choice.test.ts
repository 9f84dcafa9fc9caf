// tool_choice through the API on a random-weight Qwen3 model (Qwen3's tokenizer and chat template, random
// weights): "required" and a named function always give one tool call with valid JSON arguments, streamed
// or not, and the turn is recorded with the exact ids and finite log-probs; "none" never gives one; bad
// choices are 400s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { Store } from '../../src/store/store.ts';
import { startServer, type RunningServer } from '../../src/api/server.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import { QWEN3_TOKENIZER, tempDir, tinyModel } from '../helpers/models.ts';
import { post, startTestServer } from '../helpers/server.ts';

const t = tempDir('ocrl-toolchoice-');
let engine: EmbeddedEngine, store: Store, server: RunningServer;
before(async () => {
  const dir = tinyModel(join(t.dir, 'qwen3'), tinyConfig('qwen3', { vocab_size: 151936, eos_token_id: 151645, bos_token_id: null, max_position_embeddings: 512 }), { tokenizerFrom: QWEN3_TOKENIZER });
  engine = await EmbeddedEngine.load(dir);
  store = new Store(join(t.dir, 'data'));
  server = await startServer({ engine, store, modelId: 'qwen3-random', port: 0 });
});
after(async () => { await server.close(); await engine.close(); store.close(); t.cleanup(); });

const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string' } } } } },
];
const ask = (extra: Record<string, unknown>, headers: Record<string, string> = {}) => post(`${server.url}/v1/chat/completions`,
  { model: 'qwen3-random', messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools, max_tokens: 96, temperature: 1, ...extra }, headers);

test('tool_choice "required": every answer is one tool call of a listed function with JSON-object arguments', async () => {
  for (let seed = 1; seed <= 4; seed++) {
    const r = await ask({ tool_choice: 'required', seed }, { 'x-session-id': `req-${seed}` });
    assert.equal(r.status, 200, r.text);
    const choice = r.json.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0].function;
    assert.ok(['get_weather', 'search'].includes(call.name), call.name);
    const args = JSON.parse(call.arguments);
    assert.ok(args !== null && typeof args === 'object' && !Array.isArray(args), call.arguments);
    // recorded token-exactly: the sampled ids with the log-probs of the distribution they came from
    const turn = store.turns(`req-${seed}`)[0];
    const ids = JSON.parse(turn.response_ids) as number[], logprobs = JSON.parse(turn.response_logprobs) as number[];
    assert.equal(ids.length, r.json.usage.completion_tokens);
    assert.equal(ids.at(-1), 151645, 'the call is closed and the sequence ended with <|im_end|>');
    assert.ok(logprobs.length === ids.length && logprobs.every((x) => Number.isFinite(x) && x <= 0));
    assert.ok(engine.tokenizer.decode(ids, false).startsWith('<tool_call>'));
  }
});

test('a named function is the one called; streaming delivers the call as a tool_calls delta', async () => {
  const named = await ask({ tool_choice: { type: 'function', function: { name: 'search' } }, seed: 7 });
  assert.equal(named.status, 200, named.text);
  assert.equal(named.json.choices[0].message.tool_calls[0].function.name, 'search');
  JSON.parse(named.json.choices[0].message.tool_calls[0].function.arguments);
  const streamed = await ask({ tool_choice: 'required', seed: 8, stream: true });
  const chunks = streamed.text.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
  const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
  assert.equal(calls.length, 1);
  JSON.parse(calls[0].function.arguments);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');
});

test('tool_choice "none" gives no tool call; bad choices and too-small budgets are 400s', async () => {
  for (let seed = 1; seed <= 3; seed++) {
    const r = await ask({ tool_choice: 'none', seed, max_tokens: 24 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices[0].message.tool_calls, undefined);
    assert.doesNotMatch(r.json.choices[0].message.content ?? '', /<tool_call>/);
  }
  const table: [Record<string, unknown>, RegExp][] = [
    [{ tool_choice: 'required', tools: undefined }, /needs at least one tool/],
    [{ tool_choice: { type: 'function', function: { name: 'nope' } } }, /'nope', which is not in 'tools'/],
    [{ tool_choice: 'always' }, /'tool_choice' must be "none", "auto", "required"/],
    [{ tool_choice: 'required', max_tokens: 8 }, /max_tokens 8 is too small for a forced tool call/],
  ];
  for (const [extra, re] of table) {
    const r = await ask(extra);
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.match(r.json.error.message, re);
    assert.equal(r.json.error.param, extra.tool_choice === 'required' && extra.max_tokens ? 'max_tokens' : 'tool_choice');
  }
});

test('a model without a tool-call format refuses to force a call (400) and ignores "none"', async () => {
  const s = await startTestServer();
  try {
    const body = { model: 'stories', messages: [{ role: 'user', content: 'Once' }], tools, max_tokens: 4 };
    const forced = await post(`${s.url}/v1/chat/completions`, { ...body, tool_choice: 'required' });
    assert.equal(forced.status, 400);
    assert.match(forced.json.error.message, /no tool-call format/);
    assert.equal((await post(`${s.url}/v1/chat/completions`, { ...body, tool_choice: 'none' })).status, 200);
  } finally {
    await s.close();
  }
});

test('on stories260k-chat (the recipe, built small here): "required" gives a call in the format the model was taught', async () => {
  const { buildChatModel, QUICK_RECIPE } = await import('../../src/recipes/chat-model/build.ts');
  const { KINDS, CALCULATOR_TOOL } = await import('../../src/recipes/chat-model/data.ts');
  const { STORIES } = await import('../helpers/models.ts');
  const dir = join(t.dir, 'stories260k-chat');
  await buildChatModel({ base: STORIES, out: dir, seed: 1, recipe: {
    pool: { ...QUICK_RECIPE.pool, free: 48, perTopic: 2, perName: 2, topicNames: 6, maxTokens: 60 },
    mix: Object.fromEntries(KINDS.map((k) => [k, 3])) as never, train: { ...QUICK_RECIPE.train, batchTokens: 2048, loraRank: 4 },
  } });
  const chatEngine = await EmbeddedEngine.load(dir);
  const chatStore = new Store(join(t.dir, 'chat-data'));
  const chatServer = await startServer({ engine: chatEngine, store: chatStore, modelId: 'stories260k-chat', port: 0 });
  try {
    const chatTools = [CALCULATOR_TOOL, { type: 'function', function: { name: 'tell_story', parameters: { type: 'object', properties: { topic: { type: 'string' } } } } }];
    for (let seed = 1; seed <= 4; seed++) {
      const r = await post(`${chatServer.url}/v1/chat/completions`, { model: 'stories260k-chat', messages: [{ role: 'user', content: 'What is 12 plus 30?' }], tools: chatTools,
        tool_choice: 'required', max_tokens: 96, seed }, { 'x-session-id': `chat-${seed}` });
      assert.equal(r.status, 200, r.text);
      const call = r.json.choices[0].message.tool_calls?.[0]?.function;
      assert.ok(call && ['calculator', 'tell_story', CALCULATOR_TOOL.function.name].includes(call.name), JSON.stringify(r.json.choices[0]));
      assert.equal(typeof JSON.parse(call.arguments), 'object');
      const ids = JSON.parse(chatStore.turns(`chat-${seed}`)[0].response_ids) as number[];
      assert.match(chatEngine.tokenizer.decode(ids, false), /^<tool_call>\{"name": "[a-z_]+", "arguments": \s*\{[\s\S]*\}\}<\/tool_call>/, 'no newlines: the template\'s own format');
    }
  } finally {
    await chatServer.close(); await chatEngine.close(); chatStore.close();
  }
});
