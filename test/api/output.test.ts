// The streaming output parser: reasoning, tool calls, and held-back partial tags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputParser } from '../../src/api/output.ts';

/** Feed `text` in pieces of `size` characters and collect what streamed out. */
function run(text: string, size: number, format = { reasoning: true, toolCalls: true }) {
  const p = new OutputParser(format);
  let content = '', reasoning = '';
  for (let i = 0; i < text.length; i += size) {
    const d = p.push(text.slice(i, i + size));
    content += d.content ?? ''; reasoning += d.reasoning ?? '';
  }
  const end = p.finish();
  content += end.delta.content ?? ''; reasoning += end.delta.reasoning ?? '';
  return { content, reasoning, toolCalls: end.toolCalls };
}

test('reasoning, content and tool calls come apart the same way whatever the chunking', () => {
  const text = '<think>\nThe user wants weather.\n</think>\n\nLet me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
  for (const size of [1, 2, 3, 7, 1000]) {
    assert.deepEqual(run(text, size), {
      content: 'Let me check.', reasoning: 'The user wants weather.',
      toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }, { name: 'get_time', arguments: '{}' }],
    }, `chunk size ${size}`);
  }
});

test('plain text passes through; a "<" that is not a tag is not held forever; bad tool JSON stays as content', () => {
  assert.deepEqual(run('Once upon a time, a < b.', 1, { reasoning: false, toolCalls: false }), { content: 'Once upon a time, a < b.', reasoning: '', toolCalls: [] });
  assert.deepEqual(run('x <tool it was', 2), { content: 'x <tool it was', reasoning: '', toolCalls: [] });
  assert.deepEqual(run('Hi <tool_call>{not json}</tool_call>', 3), { content: 'Hi <tool_call>{not json}</tool_call>', reasoning: '', toolCalls: [] });
  // a model that stops inside its thinking still returns the reasoning
  assert.deepEqual(run('<think>unfinished', 4), { content: '', reasoning: 'unfinished', toolCalls: [] });
});
