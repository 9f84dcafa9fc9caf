import assert from 'node:assert/strict';
import { daysInMonth } from '../src/months.mjs';

assert.equal(daysInMonth(1, false), 31);
assert.equal(daysInMonth(2, false), 28);
assert.equal(daysInMonth(2, true), 29);
for (const m of [4, 6, 9, 11]) assert.equal(daysInMonth(m, false), 30, `month ${m}`);
for (const m of [3, 5, 7, 8, 10, 12]) assert.equal(daysInMonth(m, true), 31, `month ${m}`);
console.log('months.test: ok');
