// distinct-n across answers: table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { distinctNgrams } from '../../src/learn/variety.ts';

test('distinct-n is the share of distinct n-grams among all, never across answers', () => {
  const table: [string, number[][], number, number][] = [
    ['no answers', [], 2, 0],
    ['answers shorter than n', [[1], [2]], 2, 0],
    ['all bigrams distinct', [[1, 2, 3], [4, 5, 6]], 2, 1],
    ['the same answer twice', [[1, 2, 3], [1, 2, 3]], 2, 0.5],
    ['one token repeated', [[7, 7, 7, 7, 7]], 2, 0.25],
    ['no bigram across the boundary', [[1, 2], [2, 1]], 2, 1],
    ['unigrams', [[1, 2, 2], [1]], 1, 0.5],
    ['trigrams of a repeat', [[1, 2, 3, 1, 2, 3]], 3, 0.75],
  ];
  for (const [name, answers, n, want] of table) assert.equal(distinctNgrams(answers, n), want, name);
});

test('distinct-n refuses a non-positive or fractional n', () => {
  for (const n of [0, -1, 1.5]) assert.throws(() => distinctNgrams([[1, 2]], n), RangeError);
});
