// Constrained decoding on its own: the JSON and tool-call machines, the token filter with a token budget,
// and the masked sampling distribution.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonMachine, ToolCallMachine, ForbidMachine, TokenTexts, accepts, allowedTokens, maskLogits } from '../../src/engine/embedded/constraint.ts';
import { sampleToken } from '../../src/engine/embedded/sampler.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';

const feed = (m: { push(ch: string): boolean }, text: string) => [...text].every((ch) => m.push(ch));

test('the JSON machine accepts exactly the prefixes of JSON values, and knows when a value is complete', () => {
  const table: [string, boolean, boolean][] = [
    // text, accepted as a prefix, complete
    ['{}', true, true], ['{"a": 1}', true, true], ['{"a": [1, 2.5e-3, -0, true, null, "x\\n\\u00e9"]}', true, true],
    ['{"a": {"b": {}}}', true, true], ['{"a"', true, false], ['{"a": -', true, false], ['{"a": 1.', true, false],
    ['{"a": tru', true, false], ['[1, 2]', true, true], ['"s"', true, true],
    ['{a: 1}', false, false], ['{"a": 01}', false, false], ['{"a": 1,}', false, false], ['{"a" 1}', false, false],
    ['[1 2]', false, false], ['{"a": "\\x"}', false, false], ['{"a": "\u0001"}', false, false], ['{}}', false, false],
    ['{"a": 1]', false, false], ['{"a": nul1}', false, false], ['{"a": 1e}', false, false],
  ];
  for (const [text, ok, done] of table) {
    const m = new JsonMachine();
    assert.equal(feed(m, text), ok, text);
    if (ok) assert.equal(m.done, done, text);
  }
  assert.equal(feed(new JsonMachine(true), '[1]'), false, 'an object is required');
  assert.equal(feed(new JsonMachine(), '{' + ' '.repeat(9)), false, 'whitespace runs are bounded');
  assert.equal(feed(new JsonMachine(), '1' + '0'.repeat(30)), false, 'numbers are bounded');
});

test('the shortest completion of any prefix makes it valid JSON', () => {
  const prefixes = ['{', '{"', '{"ab', '{"a"', '{"a":', '{"a": [', '{"a": [1', '{"a": [1,', '{"a": "x\\', '{"a": "\\u00', '{"a": -', '{"a": 1.', '{"a": 1e+', '{"a": fa', '{"a": {"b": [{"c": "'];
  for (const p of prefixes) {
    const m = new JsonMachine(true);
    assert.ok(feed(m, p), p);
    const full = p + m.completion();
    assert.ok(feed(new JsonMachine(true), full) && typeof JSON.parse(full) === 'object', `${p} → ${full}`);
  }
});

test('the tool-call machine: the block, a listed name, object arguments, the closing tag; nothing after', () => {
  const ok = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>';
  const m = new ToolCallMachine(['get_weather', 'search'], '<tool_call>\n', '\n</tool_call>');
  assert.ok(feed(m, ok));
  assert.ok(m.done);
  assert.equal(m.push('x'), false);
  for (const bad of ['Sure! <tool_call>', '<tool_call>\n{"name": "get_time"', '<tool_call>\n{"name": "search", "arguments": [1]', '<tool_call>\n{"name": "search", "arguments": {}}\n</tool-call>']) {
    assert.equal(feed(new ToolCallMachine(['get_weather', 'search'], '<tool_call>\n', '\n</tool_call>'), bad), false, bad);
  }
  const fresh = new ToolCallMachine(['get_weather', 'search'], '<tool_call>\n', '\n</tool_call>');
  assert.equal(fresh.completion(), '<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>');
});

test('random walks through allowed tokens always end in a complete call with valid JSON, whatever the budget', () => {
  // a small vocabulary: every printable ASCII character, newline, and a few multi-character pieces
  const texts = ['<eos>', ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)), '\n', '<tool_call>', '</tool_call>', '{"', '": ', '", "', 'true', '[[[', '\\u', '{"name": "', 'search', 'get_weather', 'plain words'];
  const vocab = new TokenTexts(texts);
  const stop = new Set([0]);
  for (let seed = 1; seed <= 60; seed++) {
    const rng = new Rng(seed);
    const maxTokens = 55 + Math.floor(rng.next() * 120); // the shortest call is 54 characters
    let m = new ToolCallMachine(['get_weather', 'search'], '<tool_call>\n', '\n</tool_call>') as ToolCallMachine;
    let out = '';
    let ended = false;
    for (let n = 0; n < maxTokens; n++) {
      const allowed = allowedTokens(m, vocab, stop, maxTokens - n, true);
      assert.ok(allowed.length > 0, `seed ${seed}: no allowed token after ${JSON.stringify(out)}`);
      const id = allowed[Math.floor(rng.next() * allowed.length)];
      if (stop.has(id)) { ended = true; break; }
      m = accepts(m, texts[id]) as ToolCallMachine;
      out += texts[id];
    }
    assert.ok(ended, `seed ${seed} (budget ${maxTokens}): ${JSON.stringify(out)}`);
    const body = /^<tool_call>\n([\s\S]*)\n<\/tool_call>$/.exec(out);
    assert.ok(body, out);
    const call = JSON.parse(body[1]);
    assert.ok(['get_weather', 'search'].includes(call.name));
    assert.equal(typeof call.arguments, 'object');
    assert.ok(!Array.isArray(call.arguments) && call.arguments !== null);
  }
});

test('"none": the forbidden text can never be spelled, in one token or across several', () => {
  const texts = new TokenTexts(['<eos>', '<tool_call>', '<tool', '_call>', 'hello', '<', 'tool_call>', ' ']);
  let m = new ForbidMachine('<tool_call>') as ForbidMachine;
  assert.deepEqual(allowedTokens(m, texts, new Set([0]), 10, false), [0, 2, 3, 4, 5, 6, 7]);
  m = accepts(m, '<tool') as ForbidMachine;
  assert.deepEqual(allowedTokens(m, texts, new Set([0]), 10, false), [0, 2, 4, 5, 6, 7], 'after "<tool", "_call>" would complete it');
  m = accepts(m, ' ') as ForbidMachine;
  assert.ok(allowedTokens(m, texts, new Set([0]), 10, false).includes(3));
});

test('masked sampling never picks a masked token, and its log-prob is that of the renormalised distribution', () => {
  const logits = new Float32Array([5, 1, 0, 2]);
  maskLogits(logits, 0, 4, [1, 3]);
  assert.deepEqual([...logits], [-Infinity, 1, -Infinity, 2]);
  const rng = new Rng(3);
  const z = Math.log(Math.exp(1) + Math.exp(2));
  for (let i = 0; i < 50; i++) {
    const c = sampleToken(logits, 0, 4, { temperature: 1, topP: 1, topK: 0 }, () => rng.next());
    assert.ok(c.id === 1 || c.id === 3);
    assert.ok(Math.abs(c.logprob - (logits[c.id] - z)) < 1e-6);
  }
  assert.equal(sampleToken(logits, 0, 4, { temperature: 0, topP: 1, topK: 0 }, () => 0).id, 3);
});
