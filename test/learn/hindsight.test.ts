// Hindsight answers: which earlier prompts an approved answer also trains, and the data it makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hindsightPrompts, hindsightData, type EarlierTurn } from '../../src/trainer/hindsight.ts';

const t = (score: number | null, id: number): EarlierTurn => ({ score, promptIds: [id] });

test('an approved answer trains the run of corrected requests just before it, nearest first', () => {
  const table: [EarlierTurn[], number, number[][]][] = [
    // earlier turns (nearest first), max, expected prompts
    [[], 3, []],
    [[t(-1, 1)], 3, [[1]]],
    [[t(1, 1)], 3, []],
    [[t(0, 1), t(-1, 2)], 3, []],
    [[t(null, 1), t(-1, 2)], 3, []],
    [[t(-1, 1), t(-1, 2), t(1, 3), t(-1, 4)], 3, [[1], [2]]],
    [[t(-1, 1), t(-1, 2), t(-1, 3), t(-1, 4)], 3, [[1], [2], [3]]],
    [[t(-1, 1), t(-1, 2)], 1, [[1]]],
  ];
  for (const [earlier, max, want] of table) assert.deepEqual(hindsightPrompts(earlier, max), want, JSON.stringify(earlier));
});

test('hindsight data: the response under each earlier prompt, its own advantages, old log-probs from the current policy', async () => {
  const sample = { promptIds: [9, 9], responseIds: [5, 6, 7], advantages: [0.8, 0.8, 0.8], lossMask: [1, 1, 1], temperature: 0.7 };
  const calls: [number[], number[], number][] = [];
  const behaviour = async (p: number[], r: number[], temp: number) => { calls.push([p, r, temp]); return r.map((id) => -id / 10); };
  const out = await hindsightData(sample, [[1, 2], [1, 2, 3, 4, 5, 6]], behaviour, 7);
  // the second prompt does not fit a context of 7 with the response (6 + 3 − 1 > 7)
  assert.equal(out.length, 1);
  assert.deepEqual(out[0], { promptIds: [1, 2], responseIds: [5, 6, 7], behaviourLogprobs: [-0.5, -0.6, -0.7], advantages: [0.8, 0.8, 0.8], lossMask: [1, 1, 1], temperature: 0.7 });
  assert.deepEqual(calls, [[[1, 2], [5, 6, 7], 0.7]]);
});
