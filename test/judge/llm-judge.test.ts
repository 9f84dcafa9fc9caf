// The `llm` judge backend against a scripted OpenAI-compatible endpoint (a labelled test double):
// retries, timeouts, the concurrency cap, malformed votes, and an outage that loses nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { LlmBackend, BackendUnavailable } from '../../src/judge/backends.ts';
import { PrmJudge } from '../../src/judge/judge.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { Store } from '../../src/store/store.ts';
import { startScriptedJudge, type ScriptedJudge } from '../helpers/judge-server.ts';
import { tempDir } from '../helpers/models.ts';

let sj: ScriptedJudge;
before(async () => { sj = await startScriptedJudge(); });
after(async () => { await sj.close(); });

const input = { response: 'Once upon a time there was a cat.', nextState: { role: 'user' as const, text: 'No, I wanted a story about a dog.', looksLikeError: false } };
const msgs = [{ role: 'user', content: 'hi' }];

test('retries 500s and timeouts with backoff, then succeeds; gives up with BackendUnavailable', async () => {
  sj.received.length = 0;
  sj.script = (_r, n) => (n % 4 === 0 ? { status: 500 } : n % 4 === 1 ? { text: 'late', delayMs: 400 } : { text: '\\boxed{1}' });
  const b = new LlmBackend({ baseUrl: sj.url, model: 'judge', timeoutMs: 150, retries: 3 });
  assert.equal(await b.complete(msgs, { temperature: 0.6, maxTokens: 64 }), '\\boxed{1}');
  assert.equal(sj.received.length, 3, '500, timeout, then the answer');
  assert.equal(sj.received[0].temperature, 0.6);
  sj.script = () => ({ status: 503 });
  await assert.rejects(b.complete(msgs, { temperature: 0.6, maxTokens: 64 }), (e: Error) => e instanceof BackendUnavailable && /answered 503/.test(e.message));
  sj.script = () => ({ status: 400 });
  await assert.rejects(b.complete(msgs, { temperature: 0.6, maxTokens: 64 }), /answered 400/);
});

test('the concurrency cap holds however many votes are asked for at once', async () => {
  while (sj.inFlight() > 0) await new Promise((r) => setTimeout(r, 20)); // the timed-out request of the last test
  sj.maxInFlight = 0;
  sj.script = () => ({ text: '\\boxed{1}', delayMs: 40 });
  const b = new LlmBackend({ baseUrl: sj.url, model: 'judge', maxConcurrent: 2 });
  const judge = new PrmJudge(b, { m: 3 });
  await Promise.all([judge.judge(input, { hints: true }), judge.judge(input, { hints: true })]); // 12 calls
  assert.equal(sj.maxInFlight, 2);
});

test('malformed votes count as failed; the majority of the rest decides; every vote is kept raw', async () => {
  const texts = ['The reply asks for a change.\n\\boxed{-1}\n[HINT_START]The user wants a story about a dog.[HINT_END]', 'I am not sure.', '\\boxed{-1}', '\\boxed{1}\n[HINT_START]Dogs, not cats: the user wants dogs.[HINT_END]', 'no box here', '\\boxed{-1}'];
  let k = 0;
  sj.script = () => ({ text: texts[k++ % texts.length] });
  const judge = new PrmJudge(new LlmBackend({ baseUrl: sj.url, model: 'judge', maxConcurrent: 1 }), { m: 3 });
  sj.received.length = 0;
  const j = await judge.judge(input, { hints: true });
  assert.equal(j.votes.length, 6);
  // PRM votes got texts 0, 1, 2 (concurrency 1 keeps the order): -1, fail, -1
  assert.deepEqual(j.votes.filter((v) => v.kind === 'prm').map((v) => v.score), [-1, null, -1]);
  assert.equal(j.score, -1);
  // hint votes: 1 with a hint, fail, -1 → the one positive hint
  assert.equal(j.hint, 'Dogs, not cats: the user wants dogs.');
  assert.ok(j.votes.every((v) => v.backend === 'llm' && v.latencyMs >= 0 && typeof v.text === 'string'));
  // what the judge was shown: the answer and the next state with its role, not the conversation
  const shown = sj.received[0].messages.map((m) => m.content).join('\n');
  assert.match(shown, /## Next state \(role: user\)\nNo, I wanted a story about a dog\./);
  assert.doesNotMatch(shown, /Conversation before the answer/);
});

test('an outage defers judgements (none dropped); when the endpoint is back every turn gets judged', async () => {
  const t = tempDir('ocrl-judge-');
  const store = new Store(t.dir);
  try {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const id = store.beginTurn({ sessionId: `s${i}`, idSource: 'header', turnType: 'main', typeSource: 'header', request: { messages: [{ role: 'user', content: 'tell a story' }] }, promptIds: [1], policyVersion: 0 });
      store.finishTurn(id, { status: 'complete', responseIds: [2], responseLogprobs: [-1], responseText: 'A cat.', answer: { content: 'A cat.', reasoning: null, toolCalls: [] }, finishReason: 'stop', policyVersion: 0 });
      store.setNextState(id, 'paired', { role: 'user', messages: [{ role: 'user', content: i % 2 ? 'Thanks!' : 'No, a dog.' }] }, null);
      ids.push(id);
    }
    sj.script = () => ({ status: 500 });
    const loop = new JudgeLoop(store, new PrmJudge(new LlmBackend({ baseUrl: sj.url, model: 'judge', retries: 1 }), { m: 3 }), { hints: true, concurrency: 5, retryBaseMs: 10_000 });
    assert.equal(await loop.tick(), 5);
    assert.ok(ids.every((id) => store.judgement(id)!.status === 'deferred' && store.judgement(id)!.attempts === 1));
    assert.match(store.judgement(ids[0])!.last_error!, /BackendUnavailable: judge endpoint answered 500/);
    assert.equal(await loop.tick(), 0, 'not due yet');
    sj.script = (req) => ({ text: /Thanks!/.test(req.messages[1].content) ? '\\boxed{1}' : '\\boxed{-1}\n[HINT_START]The user wants a story about a dog.[HINT_END]' });
    assert.equal(await loop.tick(Date.now() + 20_000), 5);
    const done = ids.map((id) => store.judgement(id)!);
    assert.deepEqual(done.map((j) => [j.status, j.score, j.attempts]), [['done', -1, 2], ['done', 1, 2], ['done', -1, 2], ['done', 1, 2], ['done', -1, 2]]);
    assert.equal(done[1].hint, null);
    assert.equal(store.turnsToJudge(10).length, 0);
    assert.equal(store.judgementsLog.read().filter((e) => e.event === 'judgement').length, 5);
  } finally {
    store.close();
    t.cleanup();
  }
});
