import assert from 'node:assert/strict';
import { binarySearch } from '../src/search.ts';

assert.equal(binarySearch([5], 5), 0);
assert.equal(binarySearch([1, 3, 5, 7, 9], 7), 3);
assert.equal(binarySearch([1, 3, 5, 7, 9], 1), 0);
assert.equal(binarySearch([1, 3, 5, 7, 9], 4), -1);
assert.equal(binarySearch([], 4), -1);
console.log('search.test: ok');
