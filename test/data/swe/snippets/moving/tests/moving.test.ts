import assert from 'node:assert/strict';
import { movingAverage } from '../src/moving.ts';

assert.deepEqual(movingAverage([1, 2, 3, 4, 5], 2), [1.5, 2.5, 3.5, 4.5]);
assert.deepEqual(movingAverage([2, 4, 6], 3), [4]);
assert.deepEqual(movingAverage([5, 7], 1), [5, 7]);
assert.deepEqual(movingAverage([1, 2], 3), []);
console.log('moving.test: ok');
