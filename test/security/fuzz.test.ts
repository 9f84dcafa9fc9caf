// Property-based fuzzing of POST /v1/chat/completions (fast-check): 10,000 requests drawn from the
// chat request schema — right fields with wrong types, ranges, shapes and nesting, mixed with valid
// ones — against the real server and engine. No request may get a 5xx, crash the server or hang it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => { s = await startTestServer({ maxConcurrent: 8, defaultMaxTokens: 4 }); });
after(async () => { await s.close(); });

const RUNS = 10_000;
const weird = fc.oneof(fc.anything({ maxDepth: 3 }), fc.constantFrom(null, NaN, -1, 0, 1e308, -1e308, 2 ** 53, '', '∞', [], {}, true));
/** Usually well-typed, sometimes anything at all (so that many requests get past validation). */
const mostly = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 40, arbitrary: a }, { weight: 1, arbitrary: weird });
/** Absent half the time, else mostly well-typed. */
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof(fc.constant(undefined), mostly(a));
/** Absent nine times in ten. */
const rarely = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: mostly(a) });
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.constantFrom('<tool_call>{"name": "f"}</tool_call>', '<think>', '{{ raise_exception("x") }}', '\u0000', '\ud800'));
const content = fc.oneof({ weight: 10, arbitrary: text }, { weight: 3, arbitrary: fc.array(fc.record({ type: fc.constantFrom('text', 'text', 'text', 'text', 'text', 'text', 'text', 'image_url'), text }), { maxLength: 3 }) });
const toolCall = fc.record({ id: maybe(text), type: maybe(fc.constant('function')), function: fc.record({ name: text, arguments: maybe(fc.oneof(fc.json({ maxDepth: 3 }), text)) }) });
const message = fc.record({
  role: fc.oneof({ weight: 30, arbitrary: fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool') }, { weight: 1, arbitrary: weird }),
  content: mostly(content),
  tool_calls: rarely(fc.array(toolCall, { maxLength: 2 })),
  tool_call_id: maybe(text),
  reasoning_content: maybe(text),
  name: maybe(text),
}, { requiredKeys: ['role', 'content'] }).map((m) => (m.role === 'assistant' ? m : { ...m, tool_calls: undefined }));
const tool = fc.record({ type: mostly(fc.constant('function')), function: mostly(fc.record({ name: mostly(fc.string({ minLength: 1, maxLength: 12 })), description: maybe(text), parameters: maybe(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }))) })) });
const body = fc.record({
  model: mostly(fc.constant('stories')),
  messages: mostly(fc.array(message, { minLength: 1, maxLength: 4 })),
  max_tokens: maybe(fc.integer({ min: 0, max: 4 })),
  max_completion_tokens: maybe(fc.integer({ min: 1, max: 3 })),
  temperature: maybe(fc.double({ min: 0, max: 2, noNaN: true })),
  top_p: maybe(fc.double({ min: 0.01, max: 1, noNaN: true })),
  top_k: maybe(fc.integer({ min: -3, max: 600 })),
  seed: maybe(fc.integer()),
  stop: maybe(fc.oneof(text, fc.array(text, { maxLength: 5 }))),
  stream: maybe(fc.boolean()),
  stream_options: maybe(fc.record({ include_usage: maybe(fc.boolean()) })),
  logprobs: maybe(fc.boolean()),
  top_logprobs: maybe(fc.integer({ min: -1, max: 25 })),
  n: rarely(fc.integer({ min: 0, max: 3 })),
  tools: rarely(fc.array(tool, { maxLength: 2 })),
  tool_choice: maybe(fc.oneof(fc.constantFrom('auto', 'none', 'required'), fc.record({ type: fc.constant('function'), function: fc.record({ name: text }) }))),
  chat_template_kwargs: maybe(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }))),
  user: maybe(text),
  session_id: maybe(text),
  prompt_cache_key: maybe(text),
}, { requiredKeys: ['model', 'messages'] });

const BATCH = 8;

/** One request; throws on a 5xx or on a response that is not well-formed OpenAI output. */
async function check(b: unknown, statuses: Map<number, number>): Promise<void> {
  const r = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b), signal: AbortSignal.timeout(60_000) });
  const text = await r.text();
  statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  if (r.status >= 500) throw new Error(`${r.status}: ${text.slice(0, 300)}`);
  if (r.status >= 400) assert.equal(typeof JSON.parse(text).error.message, 'string');
  else if (r.headers.get('content-type')?.startsWith('application/json')) assert.ok(JSON.parse(text).choices, text.slice(0, 200));
  else assert.match(text, /data: \[DONE\]\n\n$|"error"/);
}

test(`fuzz: ${RUNS} chat requests drawn from the schema (${BATCH} at a time) never get a 5xx or crash the server`, { timeout: 600_000 }, async () => {
  const t0 = performance.now();
  const statuses = new Map<number, number>();
  await fc.assert(fc.asyncProperty(fc.array(body, { minLength: BATCH, maxLength: BATCH }), async (bodies) => {
    await Promise.all(bodies.map((b) => check(b, statuses)));
  }), { numRuns: RUNS / BATCH, seed: 20261123, endOnFailure: true });
  assert.equal((await fetch(`${s.url}/healthz`)).status, 200);
  console.log(`# fuzz: ${RUNS} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
});
