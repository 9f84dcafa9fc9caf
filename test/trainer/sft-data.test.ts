// SFT data: the exact ids of a rendered conversation with a loss mask on assistant output only,
// checked on stories260K's plain-text fallback and on the real Qwen3 chat template with tools;
// malformed records are refused naming their line.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChatTokenizer, type ChatMessage, type ToolSpec } from '../../src/engine/embedded/tokenizer.ts';
import {
  encodeChatExample, parseSftRecord, readSftFile, encodeRecords, exampleToDatum, splitExamples, lengthGroupedBatches, SftDataError,
} from '../../src/trainer/sft.ts';
import { QWEN3_TOKENIZER, STORIES, tempDir } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);
const stories = ChatTokenizer.load(STORIES);
const qwen = ChatTokenizer.load(QWEN3_TOKENIZER);

/** The masked runs of an encoded example, decoded with special tokens kept. */
function maskedSpans(tok: ChatTokenizer, ids: number[], mask: number[]): string[] {
  const spans: string[] = [];
  let run: number[] = [];
  mask.forEach((m, t) => {
    if (m === 1) run.push(ids[t]);
    else if (run.length) { spans.push(tok.decode(run, false)); run = []; }
  });
  if (run.length) spans.push(tok.decode(run, false));
  return spans;
}

test('plain-text fallback (stories260K): the ids are the joined text with BOS, and only the assistant messages are masked in', () => {
  const messages: ChatMessage[] = [
    { role: 'user', content: 'Tell me a story.' },
    { role: 'assistant', content: 'Once upon a time there was a dog.' },
    { role: 'user', content: 'More please.' },
    { role: 'assistant', content: 'The dog ran home.' },
  ];
  const { ids, mask } = encodeChatExample(stories, { messages });
  assert.deepEqual(ids, stories.encode('Tell me a story.\nOnce upon a time there was a dog.\nMore please.\nThe dog ran home.'));
  assert.equal(ids[0], 1);
  assert.equal(mask.length, ids.length);
  // the fallback joins messages with a newline, which belongs to the message that follows it
  assert.deepEqual(maskedSpans(stories, ids, mask), ['\nOnce upon a time there was a dog.', '\nThe dog ran home.']);
  const userIds = stories.encode('Tell me a story.');
  assert.ok(mask.slice(0, userIds.length).every((m) => m === 0));
});

const tools: ToolSpec[] = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const toolConversation: ChatMessage[] = [
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
];

test('Qwen3 template with tools: the tool calls and the final answer are masked in, each through its <|im_end|>; system, user, tool results and template glue are not', () => {
  const { ids, mask } = encodeChatExample(qwen, { messages: toolConversation, tools });
  assert.deepEqual(ids, qwen.encode(qwen.renderChat(toolConversation, { tools, addGenerationPrompt: false }), false));
  assert.deepEqual(maskedSpans(qwen, ids, mask), [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>',
    // the template gives the last assistant turn an empty think block: the model generates it too
    '<think>\n\n</think>\n\nParis is 21°C and Rome is 25°C.<|im_end|>',
  ]);
  // the unmasked part is everything else, in order: nothing is lost or doubled
  const unmasked = qwen.decode(ids.filter((_, t) => mask[t] === 0), false);
  assert.ok(unmasked.startsWith('<|im_start|>system\nYou are a helpful assistant.'));
  assert.ok(unmasked.includes('<|im_start|>user\n<tool_response>\n{"temp_c": 21}\n</tool_response>'));
  // the newline after the last <|im_end|> is template glue the model never generates
  assert.ok(unmasked.endsWith('<|im_start|>assistant\n\n'), JSON.stringify(unmasked.slice(-40)));
  assert.ok(!unmasked.includes('get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>'));
});

test('Qwen3 template, two user turns: each answer is masked, reasoning of an earlier turn dropped as the template drops it', () => {
  const messages: ChatMessage[] = [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello!', reasoning_content: 'greet back' },
    { role: 'user', content: 'Add 2+2' },
    { role: 'assistant', content: '4', reasoning_content: '2+2 is 4' },
  ];
  const { ids, mask } = encodeChatExample(qwen, { messages });
  assert.deepEqual(maskedSpans(qwen, ids, mask), ['Hello!<|im_end|>', '<think>\n2+2 is 4\n</think>\n\n4<|im_end|>']);
});

test('a template that is not prefix-stable is refused with a clear error, not guessed around', () => {
  const tj = JSON.parse(readFileSync(join(STORIES, 'tokenizer.json'), 'utf8'));
  // the turn count is printed first, so a shorter conversation renders a different beginning
  const counting = new ChatTokenizer(tj, { eos_token: '</s>' }, '{{ messages|length }} turns\n{% for m in messages %}{{ m.role }}: {{ m.content }}</s>\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}');
  assert.throws(() => encodeChatExample(counting, { messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] }), (e: Error) => e instanceof SftDataError && /not prefix-stable/.test(e.message));
  // the same template without the count is fine: the answer and its </s> are masked
  const stable = new ChatTokenizer(tj, { eos_token: '</s>' }, '{% for m in messages %}{{ m.role }}: {{ m.content }}</s>\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}');
  const { ids, mask } = encodeChatExample(stable, { messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] });
  assert.deepEqual(maskedSpans(stable, ids, mask), ['Hello</s>']);
});

test('a conversation without an assistant message is refused', () => {
  assert.throws(() => encodeChatExample(stories, { messages: [{ role: 'user', content: 'Hi' }] }), /no assistant message/);
});

test('malformed records: each error names the line and the problem', () => {
  const cases: [string, RegExp][] = [
    ['{"messages": [', /line 7: not valid JSON/],
    ['[1, 2]', /line 7: expected a JSON object/],
    ['{"prompt": "hi"}', /line 7: "messages" is missing or not an array/],
    ['{"messages": []}', /line 7: "messages" is empty/],
    ['{"messages": [{"role": "robot", "content": "x"}]}', /line 7: messages\[0\]\.role must be one of/],
    ['{"messages": [{"role": "user", "content": 5}, {"role": "assistant", "content": "a"}]}', /line 7: messages\[0\]\.content must be a string/],
    ['{"messages": [{"role": "user", "content": "hi"}]}', /line 7: no assistant message/],
    ['{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {}}]}]}', /line 7: messages\[1\]\.tool_calls\[0\]\.function\.name/],
    ['{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"}], "tools": {"x": 1}}', /line 7: "tools" must be an array/],
  ];
  for (const [text, re] of cases) assert.throws(() => parseSftRecord(text, 7), (e: Error) => e instanceof SftDataError && re.test(e.message), text);
});

test('a JSONL file: blank lines skipped, the first bad line named with the file; exported turns keep their exact ids', () => {
  const file = join(tmp.dir, 'data.jsonl');
  const good = JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] });
  const turn = JSON.stringify({ id: 3, status: 'complete', request: { messages: [{ role: 'user', content: 'Hi' }] }, promptIds: [1, 5, 6], responseIds: [7, 8, 2], responseText: 'x' });
  const aborted = JSON.stringify({ id: 4, status: 'aborted', request: { messages: [] }, promptIds: [1], responseIds: [7] });
  writeFileSync(file, `${good}\n\n${turn}\n${aborted}\n`);
  const { records, skipped } = readSftFile(file);
  assert.equal(skipped, 1);
  assert.deepEqual(records.map((r) => [r.line, r.kind]), [[1, 'chat'], [3, 'ids']]);
  const enc = encodeRecords(stories, records, { maxTokens: 512, vocabSize: 512 });
  assert.deepEqual(enc[1].ids, [1, 5, 6, 7, 8, 2]);
  assert.deepEqual(enc[1].mask, [0, 0, 0, 1, 1, 1]);
  // a redacted export has no ids: the request and the recorded answer are rendered as a chat
  const redacted = JSON.stringify({ id: 5, status: 'complete', request: { messages: [{ role: 'user', content: 'Hi' }], tools: null }, answer: { content: 'Hello', reasoning: null, toolCalls: [] } });
  writeFileSync(file, `${redacted}\n`);
  const [chat] = readSftFile(file).records;
  assert.equal(chat.kind, 'chat');
  assert.deepEqual(encodeRecords(stories, [chat], { maxTokens: 512, vocabSize: 512 })[0].ids, stories.encode('Hi\nHello'));
  writeFileSync(file, `${good}\n{"messages": [{"role": "user"}]}\n`);
  assert.throws(() => readSftFile(file), (e: Error) => e.message.startsWith(`${file}:2: messages[0] (user) has no content`));
});

test('examples longer than the context are cut to it (or refused when asked), ids outside the vocabulary refused', () => {
  const long = { line: 4, kind: 'ids' as const, promptIds: [1, 2, 3], responseIds: [4, 5, 6, 7, 8] };
  const [cut] = encodeRecords(stories, [long], { maxTokens: 5, vocabSize: 512, truncate: true });
  assert.deepEqual(cut.ids, [1, 2, 3, 4, 5, 6]);
  assert.equal(cut.truncated, true);
  assert.throws(() => encodeRecords(stories, [long], { maxTokens: 5, vocabSize: 512 }), /line 4: 8 tokens exceed the model's context of 5/);
  assert.throws(() => encodeRecords(stories, [long], { maxTokens: 2, vocabSize: 512, truncate: true }), /line 4: no assistant token is left/);
  assert.throws(() => encodeRecords(stories, [{ ...long, responseIds: [600] }], { maxTokens: 50, vocabSize: 512 }), /line 4: token id 600 is outside/);
});

test('exampleToDatum: the prompt is everything before the first loss token, the mask covers the rest', () => {
  assert.deepEqual(exampleToDatum({ ids: [1, 2, 3, 4, 5, 6], mask: [0, 0, 1, 1, 0, 1] }), { promptIds: [1, 2], responseIds: [3, 4, 5, 6], lossMask: [1, 1, 0, 1] });
  // trailing unmasked ids are dropped; a loss on the very first id is impossible (nothing predicts it)
  assert.deepEqual(exampleToDatum({ ids: [7, 8, 9, 10], mask: [1, 1, 1, 0] }), { promptIds: [7], responseIds: [8, 9], lossMask: [1, 1] });
  // a mask value is a loss weight: weighed tokens count as loss tokens and keep their weight
  assert.deepEqual(exampleToDatum({ ids: [1, 2, 3, 4, 5], mask: [0, 5, 1, 0.5, 0] }), { promptIds: [1], responseIds: [2, 3, 4], lossMask: [5, 1, 0.5] });
});

test('the eval split and the batches are deterministic for a seed, and batches cover every example once within the token budget', () => {
  const xs = Array.from({ length: 40 }, (_, i) => i);
  const a = splitExamples(xs, 0.1, 3), b = splitExamples(xs, 0.1, 3), c = splitExamples(xs, 0.1, 4);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a.evalSet, c.evalSet);
  assert.equal(a.evalSet.length, 4);
  assert.deepEqual([...a.train, ...a.evalSet].sort((x, y) => x - y), xs);
  assert.equal(splitExamples([1, 2, 3], 0.05, 1).evalSet.length, 1);
  assert.equal(splitExamples([1, 2, 3], 0, 1).evalSet.length, 0);
  const lengths = xs.map((i) => 10 + ((i * 37) % 50));
  const batches = lengthGroupedBatches(lengths, 120, 9);
  assert.deepEqual(batches, lengthGroupedBatches(lengths, 120, 9));
  assert.deepEqual(batches.flat().sort((x, y) => x - y), xs);
  for (const batch of batches) assert.ok(batch.length === 1 || batch.reduce((s, i) => s + lengths[i], 0) <= 120);
  // grouped by length: within a batch, lengths are close
  const spread = batches.map((bt) => Math.max(...bt.map((i) => lengths[i])) - Math.min(...bt.map((i) => lengths[i])));
  assert.ok(Math.max(...spread) <= 20, `spread ${spread}`);
});
