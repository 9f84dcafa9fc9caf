// The compact judge prompts (for small-context self judges) and how a judge picks its prompt set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compactPrmPrompt, compactHintPrompt, clip, judgePrompts, prmPrompt, hintPrompt, COMPACT_ANSWER_CHARS } from '../../src/judge/prompts.ts';
import { SelfBackend, LlmBackend, type ChatBackend } from '../../src/judge/backends.ts';
import { PrmJudge } from '../../src/judge/judge.ts';
import type { Engine } from '../../src/engine/types.ts';

test('clip keeps short text, cuts long text at a word boundary with an ellipsis, and folds whitespace', () => {
  const table: [string, number, string][] = [
    ['Thanks!', 20, 'Thanks!'],
    ['one two three four five', 13, 'one two…'],
    ['a\n\nb   c', 20, 'a b c'],
    ['abcdefghijklmnop', 8, 'abcdefgh…'],
  ];
  for (const [text, max, expected] of table) assert.equal(clip(text, max), expected);
});

test('the compact prompts carry the clipped answer and the next state with its role, and name the verdict format', () => {
  const long = 'Once upon a time there was a little girl. '.repeat(10);
  const input = { response: long, nextState: { role: 'user' as const, text: 'No, I wanted a dog.', looksLikeError: false } };
  const prm = compactPrmPrompt(input), hint = compactHintPrompt(input);
  assert.deepEqual(prm.map((m) => m.role), ['system', 'user']);
  assert.match(prm[0].content, /\\boxed\{1\}.*\\boxed\{-1\}.*\\boxed\{0\}/);
  assert.match(hint[0].content, /\\boxed\{1\}.*\[HINT_START\]…\[HINT_END\].*\\boxed\{-1\}/);
  assert.equal(prm[1].content, `Answer: ${clip(long, COMPACT_ANSWER_CHARS)}\nNext (user): No, I wanted a dog.`);
  assert.equal(hint[1].content, prm[1].content);
  const tool = compactPrmPrompt({ response: '[tool call] calculator({"expression":"1 / 0"})', nextState: { role: 'tool', text: 'Error: division by zero', looksLikeError: true } });
  assert.equal(tool[1].content, 'Answer: [tool call] calculator({"expression":"1 / 0"})\nNext (tool (error)): Error: division by zero');
});

test('a self judge on a small-context model uses the compact prompts; a large one and an LLM endpoint the full ones', async () => {
  const engineWith = (contextLength: number) => ({ info: { contextLength } }) as unknown as Engine;
  assert.equal(new SelfBackend(engineWith(512)).promptStyle, 'compact');
  assert.equal(new SelfBackend(engineWith(32768)).promptStyle, 'full');
  assert.equal(new SelfBackend(engineWith(512), 'full').promptStyle, 'full');
  assert.equal((new LlmBackend({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm' }) as ChatBackend).promptStyle, undefined);
  assert.equal(judgePrompts('compact').prm, compactPrmPrompt);
  assert.equal(judgePrompts('full').hint, hintPrompt);

  // the judge sends what the backend's style asks for
  const seen: string[] = [];
  const backend = { name: 'test-double', promptStyle: 'compact' as const, complete: async (messages: { role: string; content: string }[]) => { seen.push(messages[0].content); return '\\boxed{1}'; } };
  const j = await new PrmJudge(backend, { m: 1 }).judge({ response: 'A story.', nextState: { role: 'user', text: 'Thanks!', looksLikeError: false } }, { hints: false });
  assert.equal(j.score, 1);
  assert.equal(seen[0], compactPrmPrompt({ response: '', nextState: { role: 'user', text: '', looksLikeError: false } })[0].content);
  assert.notEqual(seen[0], prmPrompt({ response: '', nextState: { role: 'user', text: '', looksLikeError: false } })[0].content);
});
