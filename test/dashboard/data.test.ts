// The dashboard's redaction of views: every string of a nested value goes through the store's
// redactSecrets as written (a secret after a newline included), keys and non-strings untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redacted } from '../../src/dashboard/data.ts';

test('redacted: each string of a nested view is redacted as written; numbers, nulls and keys stay', () => {
  const cases: [unknown, unknown][] = [
    ['my key is sk-abcdefghijklmnop1234', 'my key is [REDACTED]'],
    ['Authorization:\nBearer\nabcdefghijklmnopqrstuvwxyz', 'Authorization:\n[REDACTED]'],
    [{ prompt: 'password=hunter2hunter2hunter2', tokens: 16, hint: null }, { prompt: 'password=[REDACTED]', tokens: 16, hint: null }],
    [[{ votes: [{ text: 'token: abcdefabcdefabcdef' }] }], [{ votes: [{ text: 'token: [REDACTED]' }] }]],
    [{ 'sk-abcdefghijklmnop1234': 1 }, { 'sk-abcdefghijklmnop1234': 1 }],
    ['Once upon a time, a dog.', 'Once upon a time, a dog.'],
    [42, 42], [null, null], [true, true],
  ];
  for (const [input, want] of cases) assert.deepEqual(redacted(input), want, JSON.stringify(input));
});
