import assert from 'node:assert/strict';
import { range, sum } from '../src/range.mjs';

assert.deepEqual(range(0, 4), [0, 1, 2, 3]);
assert.deepEqual(range(2, 9, 3), [2, 5, 8]);
assert.deepEqual(range(5, 5), []);
assert.equal(sum([1, 2, 3, 4]), 10);
assert.equal(sum([]), 0);
console.log('range.test: ok');
