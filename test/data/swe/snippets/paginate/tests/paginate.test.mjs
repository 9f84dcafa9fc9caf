import assert from 'node:assert/strict';
import { pageCount, pageSlice } from '../src/paginate.mjs';

assert.equal(pageCount(0, 5), 1);
assert.equal(pageCount(10, 5), 2);
assert.equal(pageCount(11, 5), 3);
assert.equal(pageCount(1, 5), 1);
const list = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
assert.deepEqual(pageSlice(list, 1, 3), ['a', 'b', 'c']);
assert.deepEqual(pageSlice(list, 3, 3), ['g']);
assert.deepEqual(pageSlice(list, 2, 2), ['c', 'd']);
console.log('paginate.test: ok');
