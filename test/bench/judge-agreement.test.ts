// The judge's scores against the simulated user's own verdicts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeAgreement, formatTally } from '../../src/bench/judge-agreement.ts';

test('scores are tallied per true verdict; neutral and unjudged turns are not agreement', () => {
  const a = judgeAgreement([
    { satisfied: true, score: 1, hint: null },
    { satisfied: true, score: 0, hint: null },
    { satisfied: true, score: null, hint: null },
    { satisfied: false, score: -1, hint: 'The user wants a story about a cat.' },
    { satisfied: false, score: -1, hint: 'The user wants a story about a cat.' },
    { satisfied: false, score: 1, hint: 'The user likes stories about a character named Max.' },
  ]);
  assert.deepEqual(a.satisfied, { positive: 1, neutral: 1, negative: 0, unjudged: 1 });
  assert.deepEqual(a.unsatisfied, { positive: 1, neutral: 0, negative: 2, unjudged: 0 });
  assert.equal(a.signAgreement, 3 / 5);
  assert.deepEqual(a.hints, [{ hint: 'The user wants a story about a cat.', count: 2 }, { hint: 'The user likes stories about a character named Max.', count: 1 }]);
  assert.equal(formatTally(a.satisfied), '+1 1 · 0 1 · −1 0 · unjudged 1');
  assert.equal(judgeAgreement([]).signAgreement, null);
});
