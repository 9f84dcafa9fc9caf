import assert from 'node:assert/strict';
import { isLeapYear } from '../src/leap.mjs';

assert.equal(isLeapYear(2024), true);
assert.equal(isLeapYear(2023), false);
assert.equal(isLeapYear(2001), false);
assert.equal(isLeapYear(1900), false);
assert.equal(isLeapYear(2000), true);
console.log('leap.test: ok');
