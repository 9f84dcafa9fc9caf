// The loop guard's math: the repetition limit as a density, the looping verdict, and what the guard does to a reward.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loopLimits, loops, loopExcess, guardedReward, type LoopGuard } from '../../src/learn/loops.ts';

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

test('the loop\'s excess: the tokens that close a piece\'s occurrences past the limit, and nothing in an answer that does not loop', () => {
  const piece = [7, 8, 9];
  const distinct = (n: number, from = 100) => Array.from({ length: n }, (_, i) => from + i);
  const at = (mask: number[]) => mask.flatMap((x, i) => (x ? [i] : []));
  const table: [string, number[], number[]][] = [
    ['distinct tokens', distinct(20), []],
    ['a piece 3 times (the limit)', [...piece, ...piece, ...piece, ...distinct(10)], []],
    // 7 8 9 ×5: every 3-token window of the run recurs; 7,8,9 / 8,9,7 / 9,7,8 pass 3 from their 4th occurrence on
    ['a piece 5 times', [...Array(5).fill(piece).flat(), 1, 2], [11, 12, 13, 14]],
    ['the 4th occurrence after other text', [1, 2, ...piece, 3, ...piece, 4, ...piece, 5, ...piece, 6], [16]],
    ['a longer answer allows more (128 tokens: 6)', [...Array(5).fill(piece).flat(), ...distinct(113)], []],
  ];
  for (const [name, ids, want] of table) {
    const mask = loopExcess(ids);
    assert.equal(mask.length, ids.length, name);
    assert.deepEqual(at(mask), want, name);
  }
  assert.deepEqual(at(loopExcess([1, 1, 1, 1, 1], { n: 2, maxRepeats: 2, maxCharRun: 5 })), [3, 4], 'a 2-gram limit of 2');
});
