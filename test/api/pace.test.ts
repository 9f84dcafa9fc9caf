// The server under a training pace (--max-lag): a main turn that finds the trainer too far behind waits
// before it is answered — after handing what it says about the previous answer to the judge — and is
// answered once the trainer catches up; side turns never wait.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { TrainingPace } from '../../src/trainer/pace.ts';

let s: TestServer;
let backlog = 0;
const pace = new TrainingPace(() => backlog, { maxLagBatches: 0, batchSize: 4, maxWaitMs: 20_000, pollMs: 10_000 });
before(async () => { s = await startTestServer({ pace }); });
after(async () => { await s.close(); });

const ask = (messages: { role: string; content: string }[], type = 'main') =>
  post(`${s.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 8, temperature: 0 }, { 'x-session-id': `paced-${type}`, 'x-turn-type': type });

test('a main turn waits while the trainer is behind; the previous answer is paired at once; it is answered after the step', async () => {
  const first = await ask([{ role: 'user', content: 'Once upon a time' }]);
  assert.equal(first.status, 200);
  const answer = first.json.choices[0].message.content as string;
  const turnsBefore = s.store.turns().length;
  backlog = 4; // a full batch waits for the trainer
  let answered = false;
  const second = ask([{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: answer }, { role: 'user', content: 'Tell me more about the dog.' }])
    .then((r) => { answered = true; return r; });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(answered, false, 'answered while the trainer was a batch behind');
  assert.equal(pace.waiting, 1);
  assert.equal(s.store.turns().length, turnsBefore, 'no new turn is started while it waits');
  // the judge can read the next state while the turn waits
  assert.equal(s.store.turns().at(-1)!.next_state_status, 'paired');
  backlog = 0;
  pace.wake();
  const r = await second;
  assert.equal(r.status, 200);
  assert.equal(s.store.turns().length, turnsBefore + 1);
  assert.equal(pace.counts.held, 1);
});

test('side turns (the agent\'s own housekeeping) never wait for the trainer', async () => {
  backlog = 100;
  const t0 = performance.now();
  const r = await ask([{ role: 'user', content: 'Summarise: the dog ran.' }], 'side');
  assert.equal(r.status, 200);
  assert.ok(performance.now() - t0 < 10_000);
  assert.equal(pace.waiting, 0);
  backlog = 0;
});
