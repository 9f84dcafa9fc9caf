// The token protocol of agent episodes: tool calls read from the policy's text, observations
// rendered by the chat template into ids appended after the exact sampled ids; rewards and pass@k.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseToolCall, observationIds, headMessages } from '../../src/agent/protocol.ts';
import { integratedReward, groupAdvantages, passAtK, linearDecay } from '../../src/agent/rewards.ts';
import { ChatTokenizer } from '../../src/engine/embedded/tokenizer.ts';
import { STORIES } from '../helpers/models.ts';

test('tool calls are read in the Hermes format; malformed ones give a reason; none means a final answer', () => {
  assert.deepEqual(parseToolCall('Let me see. <tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>'), { ok: true, name: 'calculator', arguments: { expression: '2+3' } });
  assert.deepEqual(parseToolCall('<tool_call>{"name": "run", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>'), { ok: true, name: 'run', arguments: { command: 'ls' } });
  assert.equal(parseToolCall('The answer is 5.'), null);
  const bad: [string, RegExp][] = [
    ['<tool_call>{"name": "calculator"', /not closed/], ['<tool_call>{oops}</tool_call>', /not valid JSON/],
    ['<tool_call>{"arguments": {}}</tool_call>', /needs \{"name"/], ['<tool_call>{"name": "x", "arguments": [1]}</tool_call>', /must be an object/],
  ];
  for (const [text, why] of bad) { const p = parseToolCall(text); assert.ok(p && !p.ok && why.test(p.error), text); }
});

/** The stories260K tokenizer with a ChatML template and its turn tokens added (as a chat model has). */
function chatmlTokenizer(): ChatTokenizer {
  const json = JSON.parse(readFileSync(join(STORIES, 'tokenizer.json'), 'utf8'));
  const base = json.model.vocab ? Object.keys(json.model.vocab).length : 512;
  json.added_tokens = [...(json.added_tokens ?? []), ...['<|im_start|>', '<|im_end|>'].map((content, i) => ({ id: base + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }))];
  const template = "{%- for m in messages -%}{%- if m.role == 'tool' -%}{{- '<|im_start|>user\\n<tool_response>' + m.content + '</tool_response><|im_end|>\\n' -}}{%- else -%}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";
  return new ChatTokenizer(json, { eos_token: '<|im_end|>' }, template);
}

test('observation ids are the template\'s end of turn, tool message and next assistant opening, as ids', () => {
  const tok = chatmlTokenizer();
  const head = headMessages('sys', 'What is 2 + 3?');
  const ids = observationIds(tok, head, [], '5', false);
  assert.equal(tok.decode(ids, false).replace(/ \n/g, '\n').replace(/> /g, '>'), '<|im_end|>\n<|im_start|>user\n<tool_response>5</tool_response><|im_end|>\n<|im_start|>assistant\n');
  // the ids are exactly those the template's rendering of the whole conversation ends with (the
  // suffix starts at a special token, so tokenizing it alone splits it the same way)
  const modelText = '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>';
  const full = tok.encodeChat([...head, { role: 'assistant', content: modelText }, { role: 'tool', content: '5' }]);
  assert.deepEqual(full.slice(full.length - ids.length), ids);
  // a model that ended its turn itself already sampled <|im_end|>: it is not added twice
  const afterEos = observationIds(tok, head, [], '5', true);
  assert.deepEqual(afterEos, ids.slice(1));
});

test('without a chat template the observation is its text on its own line', () => {
  const tok = ChatTokenizer.load(STORIES);
  assert.equal(tok.decode(observationIds(tok, headMessages('', 'Hi'), [], 'result', false)), '\nresult\n');
});

test('integrated reward = outcome + λ · mean step score (unscored steps ignored)', () => {
  const table: [number, number[], number, number][] = [[1, [], 0.5, 1], [1, [1, -1], 0.5, 1], [-1, [1, 1], 0.5, -0.5], [-1, [1, NaN, 0], 0.2, -0.9], [1, [-1], 0, 1]];
  for (const [o, s, l, r] of table) assert.ok(Math.abs(integratedReward(o, s, l) - r) < 1e-12, `${o} ${s} ${l}`);
});

test('group advantages are normalised within the group; a group without variance carries none', () => {
  const a = groupAdvantages([1, -1, -1, -1])!;
  assert.ok(Math.abs(a.reduce((x, y) => x + y, 0)) < 1e-9);
  assert.ok(a[0] > 1.5 && a[1] < 0);
  assert.equal(groupAdvantages([-1, -1, -1]), null);
  assert.equal(groupAdvantages([1]), null);
});

test('pass@k is the unbiased estimator 1 − C(n−c,k)/C(n,k)', () => {
  const table: [number, number, number, number][] = [[10, 0, 1, 0], [10, 10, 5, 1], [10, 3, 1, 0.3], [4, 1, 2, 0.5], [5, 2, 5, 1], [10, 1, 10, 1]];
  for (const [n, c, k, v] of table) assert.ok(Math.abs(passAtK(n, c, k) - v) < 1e-12, `${n} ${c} ${k}`);
  assert.throws(() => passAtK(2, 1, 3), RangeError);
});

test('linearDecay: 1 at the start, the floor at the end, linear between, clamped outside', () => {
  const cases: [number, number, number][] = [[0, 0.1, 1], [1, 0.1, 0.1], [0.5, 0.1, 0.55], [0.25, 0, 0.75], [-1, 0.1, 1], [2, 0.1, 0.1]];
  for (const [share, floor, want] of cases) assert.ok(Math.abs(linearDecay(share, floor) - want) < 1e-12, `linearDecay(${share}, ${floor})`);
});
