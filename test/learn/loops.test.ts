// The loop guard's math: the repetition limit as a density, the looping verdict, and what the guard does to a reward.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loopLimits, loops, guardedReward, loopOnset, advantagesFromOnset, type LoopGuard } from '../../src/learn/loops.ts';

test('the limit is 3 repeats of a 3-token piece per 64 tokens, never below 3', () => {
  const table: [number, number][] = [[0, 3], [10, 3], [64, 3], [65, 4], [128, 6], [200, 10], [640, 30]];
  for (const [n, want] of table) assert.equal(loopLimits(n).maxRepeats, want, `n=${n}`);
  assert.equal(loopLimits(64).n, 3);
  assert.equal(loopLimits(64).maxCharRun, 5);
});

test('an answer loops when a 3-token piece recurs past its length\'s limit or one character runs past 5', () => {
  const piece = [7, 8, 9];
  const distinct = (n: number, from = 100) => Array.from({ length: n }, (_, i) => from + i);
  const table: [string, number[], string, boolean][] = [
    ['distinct tokens', distinct(64), 'fine', false],
    ['a piece 3 times in 64 tokens', [...piece, ...piece, ...piece, ...distinct(55)], 'fine', false],
    ['a piece 4 times in 64 tokens', [...piece, ...piece, ...piece, ...piece, ...distinct(52)], 'fine', true],
    ['a piece 4 times in 128 tokens (limit 6)', [...piece, ...piece, ...piece, ...piece, ...distinct(116)], 'fine', false],
    ['a piece 7 times in 128 tokens', [...Array(7).fill(piece).flat(), ...distinct(107)], 'fine', true],
    ['one character 6 times in a row', distinct(10), 'lllllll was', true],
    ['one character 5 times in a row', distinct(10), 'lllll was', false],
    ['spaces do not count as a run', distinct(10), 'a       b', false],
  ];
  for (const [name, ids, text, want] of table) assert.equal(loops(ids, text), want, name);
});

test('the guard caps a looping answer\'s reward at 0 (withhold) or sets it to −1 (punish); other answers keep theirs', () => {
  const table: [number | null, boolean, LoopGuard, number | null][] = [
    [1, true, 'withhold', 0], [0.5, true, 'withhold', 0], [0, true, 'withhold', 0], [-1, true, 'withhold', -1],
    [1, true, 'punish', -1], [0, true, 'punish', -1], [-0.5, true, 'punish', -1],
    [1, true, 'off', 1], [1, false, 'withhold', 1], [1, false, 'punish', 1], [-1, false, 'punish', -1],
    [null, true, 'punish', null], [null, true, 'withhold', null],
  ];
  for (const [r, looping, guard, want] of table) assert.equal(guardedReward(r, looping, guard), want, `${r} ${looping} ${guard}`);
});

test('the loop starts at the earliest 3-token piece past the limit, or at the token that carries a character run past 5', () => {
  const piece = [7, 8, 9];
  const distinct = (n: number, from = 100) => Array.from({ length: n }, (_, i) => from + i);
  const noText = () => 'fine';
  const table: [string, number[], (k: number) => string, number][] = [
    ['no loop: no onset', distinct(64), noText, 64],
    // the 4th occurrence of the piece starts at token 9 + 3 distinct tokens = 12
    ['a piece 4 times in 64 tokens', [...piece, ...piece, ...piece, ...distinct(3), ...piece, ...distinct(49)], noText, 12],
    // overlapping repeats of one token: [5,5,5] occurs at 0, 1, 2, then 3
    ['one token 7 times', [...Array(7).fill(5), ...distinct(57)], noText, 3],
    ['a piece 4 times in 128 tokens (limit 6): no onset', [...piece, ...piece, ...piece, ...piece, ...distinct(116)], noText, 128],
    // token k adds one "l" after "ab ": the run of 6 is complete with the 6th l, token index 6
    ['a run of one character', distinct(20), (k) => `ab ${'l'.repeat(Math.max(0, k - 1))}`, 6],
    // both: the earlier wins
    ['a run before a repeated piece', [...distinct(10), ...piece, ...piece, ...piece, ...piece, ...distinct(42)], (k) => (k >= 4 ? 'xxxxxxx' : 'x'), 3],
  ];
  for (const [name, ids, text, want] of table) assert.equal(loopOnset(ids, text), want, name);
});

test('from the onset the loop gets the guard\'s advantage, before it the judged one', () => {
  assert.deepEqual(advantagesFromOnset(5, 2, 1, -1), [1, 1, -1, -1, -1]);
  assert.deepEqual(advantagesFromOnset(3, 0, 1, -1), [-1, -1, -1]);
  assert.deepEqual(advantagesFromOnset(3, 3, 0, -1), [0, 0, 0]);
  assert.deepEqual(advantagesFromOnset(0, 0, 1, -1), []);
});
