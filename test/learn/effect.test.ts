// Hand-worked cases for the stable-effect rule (src/learn/effect.ts) and the satisfaction grade parser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stableEffect } from '../../src/learn/effect.ts';
import { parseBoxedGrade, meanGrade } from '../../src/learn/votes.ts';

const pts = (rates: number[], every = 10) => rates.map((rate, i) => ({ conversations: i * every, rate }));

test('stable effect: the first streak of 3 evaluations at or above base + gain, counted from its first evaluation', () => {
  const table: [number[], number, { at: number | null; confirmedAt: number | null }][] = [
    [[0.1, 0.7, 0.6, 0.65, 0.7], 0.5, { at: 10, confirmedAt: 30 }],
    [[0.1, 0.7, 0.5, 0.65, 0.7, 0.9], 0.5, { at: 30, confirmedAt: 50 }],  // 0.5 < 0.6 breaks the first streak
    [[0.1, 0.6, 0.6, 0.6], 0.5, { at: 10, confirmedAt: 30 }],            // exactly at the target holds
    [[0.1, 0.7, 0.7], 0.5, { at: null, confirmedAt: null }],             // only two evaluations after the base
    [[0.9, 1, 1, 1], 0.5, { at: null, confirmedAt: null }],              // a target above 100% is never reached
    [[], 0.5, { at: null, confirmedAt: null }],
  ];
  for (const [rates, gain, expected] of table) assert.deepEqual(stableEffect(pts(rates), gain), expected, JSON.stringify(rates));
  assert.deepEqual(stableEffect(pts([0, 0.2, 0.2]), 0.1, 2), { at: 10, confirmedAt: 20 });
});

test('satisfaction grades: the last \\boxed{} among 0, 0.25, 0.5, 0.75, 1; anything else is no vote; the mean skips failed votes', () => {
  const table: [string, number | null][] = [
    ['\\boxed{1}', 1], ['It fits. \\boxed{0.75}', 0.75], ['\\boxed{.5}', 0.5], ['\\boxed{1.0}', 1], ['\\boxed{0} then \\boxed{0.25}', 0.25],
    ['\\boxed{0.3}', null], ['\\boxed{2}', null], ['\\boxed{-1}', null], ['no box', null], ['\\boxed{}', null],
  ];
  for (const [text, expected] of table) assert.equal(parseBoxedGrade(text), expected, text);
  assert.equal(meanGrade([1, 0.5, null, 0, 0.75]), 0.5625);
  assert.equal(meanGrade([null, null]), null);
});
