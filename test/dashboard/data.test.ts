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

test('a judgement decided by a rule keeps it: stored, shown by the turn views and `turns`, and set-aside hints say why', async () => {
  const { Store } = await import('../../src/store/store.ts');
  const { listTurns } = await import('../../src/dashboard/data.ts');
  const { formatTurn } = await import('../../src/cli/turns.ts');
  const { tempDir } = await import('../helpers/models.ts');
  const t = tempDir('ocrl-judgement-rule-');
  const store = new Store(t.dir);
  try {
    const turn = (session: string) => store.beginTurn({ sessionId: session, idSource: 'header', turnType: 'main', typeSource: 'header', request: { messages: [] }, promptIds: [1], policyVersion: 0 });
    const a = turn('a'), b = turn('b');
    store.saveJudgement(a, { score: -1, hint: null, backend: 'self', rule: '2 hint vote(s) ask for what the answer lacks (PRM majority 1)', votes: [
      { kind: 'prm', score: 1, hint: null, text: '\\boxed{1}' },
      { kind: 'hint', score: 1, hint: null, text: '\\boxed{1} [HINT_START]The user wants a box.[HINT_END]', dropped: 'none of its words are in the next state' }] });
    store.saveJudgement(b, { score: 1, hint: null, backend: 'self', votes: [{ kind: 'prm', score: 1, hint: null, text: '\\boxed{1}' }] });
    const views = new Map(listTurns(store).map((v) => [v.id, v]));
    assert.equal(views.get(a)!.judgement!.rule, '2 hint vote(s) ask for what the answer lacks (PRM majority 1)');
    assert.equal(views.get(a)!.judgement!.votes[1].dropped, 'none of its words are in the next state');
    assert.equal(views.get(b)!.judgement!.rule, null);
    assert.match(formatTurn(views.get(a)!), /rule: {3}2 hint vote\(s\) ask for what the answer lacks/);
    assert.doesNotMatch(formatTurn(views.get(b)!), /rule:/);
    // a store of schema 4 (no rule column), as `turns` may read one read-only before serve has migrated it
    store.db.exec('ALTER TABLE judgements DROP COLUMN rule');
    assert.equal(listTurns(store).find((v) => v.id === a)!.judgement!.rule, null);
  } finally {
    store.close();
    t.cleanup();
  }
});
