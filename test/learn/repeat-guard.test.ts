// The repeat guard's math: the window of recent answers, what the guard does to a reward, and the evaluation's
// share of word-for-word repeats.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecentAnswers, answerKey, repeatShare, type RepeatGuard } from '../../src/learn/repeat-guard.ts';
import { guardedReward } from '../../src/learn/loops.ts';

test('an answer repeats when the same ids are among the last N answers; the window forgets the oldest', () => {
  // [answer ids, seen before?] in order, window 3
  const table: [number[], boolean][] = [
    [[1, 2, 3], false],
    [[1, 2, 3], true], // the retelling
    [[1, 2], false], // a prefix is another answer
    [[4], false],
    [[1, 2, 3], true], // still in the window: the last three are [1,2,3], [1,2], [4]
    [[5], false],
    [[6], false],
    [[7], false],
    [[1, 2, 3], false], // forgotten: the window holds [5], [6], [7]
    [[], false], // an empty answer is never a repeat
    [[], false],
  ];
  const recent = new RecentAnswers(3);
  table.forEach(([ids, want], i) => assert.equal(recent.seenThenAdd(ids), want, `answer ${i}: ${ids.join(',')}`));
  assert.equal(recent.size, 3);
});

test('a story told three times in a row repeats twice; the count survives one copy leaving the window', () => {
  const recent = new RecentAnswers(2);
  assert.deepEqual([[9, 9], [9, 9], [9, 9], [8]].map((ids) => recent.seenThenAdd(ids)), [false, true, true, false]);
  // the window holds [9,9] and [8]: the first [9,9] left, the second is still there
  assert.equal(recent.seenThenAdd([9, 9]), true);
});

test('ids are compared exactly, typed arrays and plain arrays alike', () => {
  assert.equal(answerKey([10, 2]), answerKey(Int32Array.from([10, 2])));
  assert.notEqual(answerKey([1, 2]), answerKey([12]));
  assert.notEqual(answerKey([1, 22]), answerKey([12, 2]));
});

test('the window must hold at least one answer', () => {
  for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => new RecentAnswers(bad), RangeError, String(bad));
});

test('the guard caps a repeat\'s reward at 0 (withhold) or sets it to −1 (punish); other answers keep theirs', () => {
  const table: [number | null, boolean, RepeatGuard, number | null][] = [
    [1, true, 'withhold', 0],
    [0.5, true, 'withhold', 0],
    [0, true, 'withhold', 0],
    [-1, true, 'withhold', -1],
    [1, true, 'punish', -1],
    [-1, true, 'punish', -1],
    [1, true, 'off', 1],
    [1, false, 'withhold', 1],
    [1, false, 'punish', 1],
    [null, true, 'punish', null],
  ];
  for (const [reward, repeated, guard, want] of table) assert.equal(guardedReward(reward, repeated, guard), want, `${reward} ${repeated} ${guard}`);
});

test('the evaluation\'s repeat share counts word-for-word repeats to the same prompt only', () => {
  const a = (prompt: string, text: string) => ({ prompt, text });
  const table: [string, { prompt: string; text: string }[], number][] = [
    ['nothing to count', [], 0],
    ['all different', [a('p', 'x'), a('p', 'y'), a('q', 'z')], 0],
    ['the same text to two prompts is not a repeat', [a('p', 'x'), a('q', 'x')], 0],
    ['one story four times to one prompt', [a('p', 'x'), a('p', 'x'), a('p', 'x'), a('p', 'x')], 3 / 4],
    ['one repeat in four', [a('p', 'x'), a('p', 'y'), a('q', 'x'), a('p', 'x')], 1 / 4],
  ];
  for (const [name, answers, want] of table) assert.equal(repeatShare(answers), want, name);
});
