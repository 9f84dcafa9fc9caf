// The dashboard's redaction of views: every string of a nested value goes through the store's
// redactSecrets as written (a secret after a newline included), keys and non-strings untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redacted } from '../../src/dashboard/data.ts';

test('redacted: each string of a nested view is redacted as written; numbers, nulls and keys stay', () => {
  const cases: [unknown, unknown][] = [
    ['my key is sk-abcdefghijklmnop1234', 'my key is [REDACTED]'],
    ['Authorization:\nBearer\nabcdefghijklmnopqrstuvwxyz', 'Authorization:\nBearer [REDACTED]'],
    [{ prompt: 'password=hunter2hunter2hunter2', tokens: 16, hint: null }, { prompt: 'password=[REDACTED]', tokens: 16, hint: null }],
    [[{ votes: [{ text: 'token: abcdefabcdefabcdef' }] }], [{ votes: [{ text: 'token: [REDACTED]' }] }]],
    [{ 'sk-abcdefghijklmnop1234': 1 }, { 'sk-abcdefghijklmnop1234': 1 }],
    ['Once upon a time, a dog.', 'Once upon a time, a dog.'],
    [42, 42], [null, null], [true, true],
  ];
  for (const [input, want] of cases) assert.deepEqual(redacted(input), want, JSON.stringify(input));
});

test('judge health: judged and waiting turns, retries, failed votes and the last error (redacted), from the store', async () => {
  const { Store } = await import('../../src/store/store.ts');
  const { judgeHealth } = await import('../../src/dashboard/data.ts');
  const { tempDir } = await import('../helpers/models.ts');
  const t = tempDir('ocrl-judge-health-');
  const store = new Store(t.dir);
  try {
    const turn = (session: string) => store.beginTurn({ sessionId: session, idSource: 'header', turnType: 'main', typeSource: 'header', request: { messages: [] }, promptIds: [1], policyVersion: 0 });
    const a = turn('a'), b = turn('b');
    assert.deepEqual(judgeHealth(store), { judged: 0, deferred: 0, retries: 0, voteErrors: 0, lastError: null });
    store.saveJudgement(a, { score: 1, hint: null, backend: 'llm', votes: [{ kind: 'prm', score: 1 }, { kind: 'prm', score: null, error: 'TimeoutError: judge took too long' }, { kind: 'prm', score: 1 }] });
    store.deferJudgement(b, 'llm', 'BackendUnavailable: 503', Date.now() + 1000);
    store.deferJudgement(b, 'llm', 'BackendUnavailable: 401 for key sk-abcdefghijklmnop1234', Date.now() + 2000);
    assert.deepEqual(judgeHealth(store), { judged: 1, deferred: 1, retries: 1, voteErrors: 1, lastError: 'BackendUnavailable: 401 for key [REDACTED]' });
  } finally {
    store.close();
    t.cleanup();
  }
});
