// PRM step scores for agent episodes through an OpenAI-compatible judge endpoint (a scripted TEST
// DOUBLE of the external judge): m votes per tool step, their mean, and unscorable steps left out of
// the integrated reward.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startScriptedJudge } from '../helpers/judge-server.ts';
import { LlmBackend } from '../../src/judge/backends.ts';
import { scoreSteps } from '../../src/agent/prm.ts';
import { integratedReward } from '../../src/agent/rewards.ts';
import type { EpisodeResult, EpisodeTurn } from '../../src/agent/episode.ts';

const turn = (text: string, call: boolean, observation: string | null): EpisodeTurn => ({
  turnId: 1, promptIds: [1], responseIds: [2], logprobs: [-1], policyVersion: 0, text,
  call: call ? { name: 'calculator', arguments: { expression: '2+3' } } : null, observation,
});

test('each tool step gets m judge votes; the step score is their mean; the final answer turn is not judged', async () => {
  const judge = await startScriptedJudge();
  // votes: the good step gets 1, 1, 1; the bad step 1, -1, and one unparseable vote
  let bad = 0;
  judge.script = (req) => {
    const user = req.messages.at(-1)!.content;
    if (user.includes('2+3')) return { text: 'fine \\boxed{1}' };
    return { text: ['no verdict', '\\boxed{1}', '\\boxed{-1}'][bad++ % 3] };
  };
  try {
    const ep: EpisodeResult = {
      task: { key: 't', question: 'What is 2 + 3?' }, status: 'done', evaluation: { score: 1, success: true }, toolCalls: 2, ended: 'answer', sampledTokens: 3, envSteps: 4, durationMs: 1,
      turns: [turn('<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>', true, '5'), turn('<tool_call>{"name": "calculator", "arguments": {"expression": "9*9"}}</tool_call>', true, '81'), turn('The answer is 5.', false, null)],
    };
    const scores = await scoreSteps(new LlmBackend({ baseUrl: `${judge.url}/v1`, model: 'judge', retries: 0 }), ep, { votes: 3, temperature: 0.6, maxTokens: 32 });
    assert.equal(judge.received.length, 6, 'two tool steps × three votes');
    assert.equal(scores[0], 1);
    assert.equal(scores[1], 0, 'mean of the two valid votes (+1, −1); the unparseable one is left out');
    const prompt = judge.received[0].messages.at(-1)!.content;
    assert.match(prompt, /Task: What is 2 \+ 3\?/);
    assert.match(prompt, /Result: (5|81)/);
    assert.equal(integratedReward(-1, scores, 0.5), -1 + 0.5 * (scores.filter(Number.isFinite).reduce((a, b) => a + b, 0) / scores.filter(Number.isFinite).length));
  } finally { await judge.close(); }
});

test('a judge that is down leaves the steps unscored, and the reward falls back to the outcome', async () => {
  const judge = await startScriptedJudge();
  judge.script = () => ({ status: 500 });
  try {
    const ep: EpisodeResult = {
      task: { key: 't', question: 'q' }, status: 'done', evaluation: { score: -1, success: false }, toolCalls: 1, ended: 'answer', sampledTokens: 1, envSteps: 3, durationMs: 1,
      turns: [turn('<tool_call>{}</tool_call>', true, 'x')],
    };
    const scores = await scoreSteps(new LlmBackend({ baseUrl: `${judge.url}/v1`, model: 'judge', retries: 0 }), ep, { votes: 2, temperature: 0.6, maxTokens: 16 });
    assert.ok(Number.isNaN(scores[0]));
    assert.equal(integratedReward(-1, scores, 0.5), -1);
  } finally { await judge.close(); }
});
