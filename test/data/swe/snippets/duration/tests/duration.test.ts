import assert from 'node:assert/strict';
import { formatDuration } from '../src/duration.ts';

assert.equal(formatDuration(45), '45s');
assert.equal(formatDuration(60), '1m');
assert.equal(formatDuration(120), '2m');
assert.equal(formatDuration(65), '1m 5s');
console.log('duration.test: ok');
