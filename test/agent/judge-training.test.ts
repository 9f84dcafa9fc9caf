// Judge consistency training, the pure parts: reading a verdict, the reward of a vote (agreement with
// the outcome, and with the step's majority), and which steps of an episode the judge scores.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseVerdict, voteReward, judgedSteps } from '../../src/agent/judge-training.ts';
import type { EpisodeResult, EpisodeTurn } from '../../src/agent/episode.ts';

test('verdicts: the number after the prompt\'s \\boxed{, only −1, 0 or 1', () => {
  const table: [string, number | null][] = [['1}', 1], ['-1}', -1], [' 0 }', 0], ['+1', 1], ['2}', null], ['yes}', null], ['', null], ['1', 1]];
  for (const [text, want] of table) assert.equal(parseVerdict(text), want, JSON.stringify(text));
});

test('a vote is rewarded for agreeing with the outcome, and by w for agreeing with the step majority', () => {
  // [vote, episode succeeded, step majority, reward with w = 0.5]
  const table: [1 | 0 | -1 | null, boolean, number, number][] = [
    [1, true, 1, 1.5], [-1, false, -1, 1.5], [1, false, -1, -1.5], [1, false, 1, -0.5], [-1, false, 1, 0.5],
    [null, true, 1, -1.5], [0, true, 0, -1], [1, true, 0, 1],
  ];
  for (const [vote, success, maj, want] of table) assert.equal(voteReward(vote, success, maj, 0.5), want, `${vote} ${success} ${maj}`);
});

test('the judged steps are the turns that got an observation, else the final turn', () => {
  const turn = (observation: string | null): EpisodeTurn => ({ turnId: 1, promptIds: [], responseIds: [1], logprobs: [0], policyVersion: 0, text: 't', call: null, observation });
  const ep = (turns: EpisodeTurn[]) => ({ turns } as unknown as EpisodeResult);
  assert.equal(judgedSteps(ep([turn('4'), turn('5'), turn(null)])).length, 2);
  const final = turn(null);
  assert.deepEqual(judgedSteps(ep([final])), [final]);
});
