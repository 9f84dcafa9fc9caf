// Background scoring yields to user-facing requests: the rule (a pure function of the job, whether
// users are in the engine, and how long scoring has waited) and its effect through the engine
// thread: a user's answer is not held behind a scoring job queued before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scoringMayRun, SCORING_MAX_WAIT_MS } from '../../src/engine/embedded/job-priority.ts';
import { STORIES } from '../helpers/models.ts';

test('scoringMayRun: scoring waits for users up to SCORING_MAX_WAIT_MS, then runs one unit; other jobs never wait', () => {
  const W = SCORING_MAX_WAIT_MS;
  const cases: [string, boolean, number | null, number, { run: boolean; waitingSince: number | null }][] = [
    ['score', false, null, 100, { run: true, waitingSince: null }],
    ['score', false, 50, 100, { run: true, waitingSince: null }],
    ['forwardBackward', true, null, 100, { run: true, waitingSince: null }],
    ['optimStep', true, 10, 100, { run: true, waitingSince: null }],
    ['score', true, null, 100, { run: false, waitingSince: 100 }],
    ['scoreTopK', true, null, 100, { run: false, waitingSince: 100 }],
    ['score', true, 100, 100 + W - 1, { run: false, waitingSince: 100 }],
    ['score', true, 100, 100 + W, { run: true, waitingSince: 100 + W }],
    ['scoreTopK', true, 100, 100 + 3 * W, { run: true, waitingSince: 100 + 3 * W }],
  ];
  for (const [name, users, since, now, want] of cases) assert.deepEqual(scoringMayRun(name, users, since, now), want, `${name} users=${users} since=${since} now=${now}`);
});

test('through the engine thread: a scoring job under way waits while a user prompt prefills, so the first token comes before the job ends', async () => {
  const { EmbeddedEngine } = await import('../../src/engine/embedded/engine.ts');
  const engine = await EmbeddedEngine.load(STORIES, { prefillChunk: 8, prefixCacheMiB: 0 });
  try {
    const tok = engine.tokenizer;
    const scored = tok.encode('Once upon a time there was a little girl named Lily.');
    const user = tok.encode('The sun was shining and the birds were singing. Tom took his red ball and ran to the big tree where his friend Sam was waiting for him.');
    assert.ok(user.length > 4 * 8, 'the user prompt takes several prefill steps');
    const order: string[] = [];
    // the scoring job is sent first: a few passes of 8 rows; taking turns with the prefill steps it would end before the first token
    const scoring = engine.score([{ promptIds: scored, responseIds: scored.slice(0, 4) }]).then(() => order.push('score'));
    for await (const ev of engine.sample(user, { maxTokens: 2, temperature: 1, topP: 1, topK: 0, seed: 1, ignoreEos: true })) if (ev.type === 'token' && !order.includes('first token')) order.push('first token');
    await scoring;
    assert.deepEqual(order, ['first token', 'score']);
  } finally {
    await engine.close();
  }
});
