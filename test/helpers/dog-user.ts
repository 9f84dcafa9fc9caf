// A scripted user who wants a dog in the story, for the trainer's tests on stories260K: one request, one piece of
// feedback (praise for a dog story, a correction otherwise), session done.
import assert from 'node:assert/strict';
import { post, type TestServer } from './server.ts';

const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily'];

export async function dogConversation(s: TestServer, c: number): Promise<void> {
  const prompt = PROMPTS[c % PROMPTS.length], h = { 'x-session-id': `conv-${c}` };
  const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 24, temperature: 1, seed: c }, h);
  assert.equal(first.status, 200);
  const answer = first.json.choices[0].message.content as string;
  const feedback = /\bdog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.';
  const second = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
  assert.equal(second.status, 200);
}
