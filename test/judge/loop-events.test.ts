// The judge loop as it runs inside `serve`: turns are judged when their next state arrives (not at a
// poll), a bounded number at once; an outage of the judge endpoint (the scripted endpoint double of
// test/helpers/judge-server.ts) parks the turns and one probe at a time asks whether it is back; a
// restart finds the turns the last process left unjudged. The store stays the source of truth.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { LlmBackend } from '../../src/judge/backends.ts';
import { PrmJudge, LexicalJudge } from '../../src/judge/judge.ts';
import { JudgeLoop, backoffMs } from '../../src/judge/loop.ts';
import { Store } from '../../src/store/store.ts';
import { startScriptedJudge, type ScriptedJudge } from '../helpers/judge-server.ts';
import { startTestServer, post } from '../helpers/server.ts';
import { tempDir } from '../helpers/models.ts';

let sj: ScriptedJudge;
before(async () => { sj = await startScriptedJudge(); });
after(async () => { await sj.close(); });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

/** A complete main turn in its own session, paired now with `feedback` as the user's next message. */
function pairedTurn(store: Store, session: string, feedback: string): number {
  const id = store.beginTurn({ sessionId: session, idSource: 'header', turnType: 'main', typeSource: 'header', request: { messages: [{ role: 'user', content: 'tell a story' }] }, promptIds: [1], policyVersion: 0 });
  store.finishTurn(id, { status: 'complete', responseIds: [2], responseLogprobs: [-1], responseText: 'A cat.', answer: { content: 'A cat.', reasoning: null, toolCalls: [] }, finishReason: 'stop', policyVersion: 0 });
  store.setNextState(id, 'paired', { role: 'user', messages: [{ role: 'user', content: feedback }] }, null);
  return id;
}

const verdictFor = (req: { messages: { content: string }[] }) => (/Thanks!/.test(req.messages.at(-1)!.content) ? '\\boxed{1}' : '\\boxed{-1}');

test('backoff doubles from the base per failure in a row and stops at the cap', () => {
  const table: [number, number, number, number][] = [
    // failures, base, cap, expected
    [1, 1000, 15_000, 1000], [2, 1000, 15_000, 2000], [4, 1000, 15_000, 8000], [5, 1000, 15_000, 15_000], [30, 1000, 15_000, 15_000], [0, 500, 15_000, 500],
  ];
  for (const [n, base, cap, want] of table) assert.equal(backoffMs(n, base, cap), want, `${n} failures`);
});

test('turns are judged as their next state arrives, never more than `concurrency` at once, with the lag recorded', async () => {
  const t = tempDir('ocrl-judge-events-');
  const store = new Store(t.dir);
  sj.maxInFlight = 0;
  sj.script = (req) => ({ text: verdictFor(req), delayMs: 30 });
  // a sweep only once a minute: whatever is judged within the test was started by the pairing event
  const loop = new JudgeLoop(store, new PrmJudge(new LlmBackend({ baseUrl: sj.url, model: 'judge', maxConcurrent: 64, retries: 0 }), { m: 1 }),
    { hints: false, concurrency: 3, sweepMs: 60_000 });
  try {
    loop.start();
    const ids = Array.from({ length: 40 }, (_, i) => pairedTurn(store, `s${i}`, i % 2 ? 'Thanks!' : 'No, a dog.'));
    await until('all 40 turns judged', () => ids.every((id) => store.judgement(id)?.status === 'done'));
    assert.equal(sj.maxInFlight, 3, 'the endpoint saw exactly the loop\'s concurrency at the busiest moment');
    assert.deepEqual(ids.map((id) => store.judgement(id)!.score), ids.map((_, i) => (i % 2 ? 1 : -1)));
    const status = loop.status() as { judged: number; backlog: number; lagSeconds: { count: number; p50: number; max: number } };
    assert.equal(status.judged, 40);
    assert.equal(status.backlog, 0);
    assert.equal(status.lagSeconds.count, 40);
    // 40 turns × 30 ms at 3 at a time ≈ 0.4 s of judging: the last waits for the ones before it, none for a poll
    assert.ok(status.lagSeconds.max > 0 && status.lagSeconds.max < 15, `lag max ${status.lagSeconds.max} s`);
    const metrics = loop.metrics();
    assert.match(metrics, /openclaw_rl_judge_lag_seconds_count 40\n/);
    assert.match(metrics, /openclaw_rl_judge_backlog 0\n/);
    assert.match(metrics, /# TYPE openclaw_rl_judge_lag_seconds summary\n/);
  } finally {
    await loop.stop();
    store.close();
    t.cleanup();
  }
});

test('an outage parks every turn (none dropped), probes one at a time with backoff, and drains the backlog when the judge is back', async () => {
  const t = tempDir('ocrl-judge-outage-');
  const store = new Store(t.dir);
  let down = true;
  sj.received.length = 0;
  sj.script = (req) => (down ? { status: 503 } : { text: verdictFor(req) });
  const loop = new JudgeLoop(store, new PrmJudge(new LlmBackend({ baseUrl: sj.url, model: 'judge', retries: 0 }), { m: 1 }),
    { hints: false, concurrency: 4, retryBaseMs: 40, outageMaxMs: 160, sweepMs: 60_000 });
  try {
    loop.start();
    const ids = Array.from({ length: 30 }, (_, i) => pairedTurn(store, `o${i}`, i % 3 ? 'Thanks!' : 'No, a dog.'));
    await sleep(1200);
    assert.ok(ids.every((id) => store.judgement(id)?.status !== 'done'), 'nothing judged while the judge is down');
    assert.ok(ids.some((id) => store.judgement(id)?.status === 'deferred'), 'the turns tried are parked in the store');
    assert.equal(store.turnsToJudge(100, Date.now() + 3_600_000).length, 30, 'every turn still waits in the store');
    const calls = sj.received.length;
    // 1.2 s of outage: the first wave (concurrency 4), then one probe per backoff (40, 80, 160, 160… ms) — not a storm
    assert.ok(calls <= 4 + 12, `${calls} calls to the endpoint while it was down`);
    const status = loop.status() as { outage: boolean; backlog: number };
    assert.equal(status.outage, true);
    assert.equal(status.backlog, 30);
    assert.match(loop.metrics(), /openclaw_rl_judge_outage 1\n/);
    down = false;
    await until('the backlog drained after the outage', () => ids.every((id) => store.judgement(id)?.status === 'done'), 10_000);
    assert.deepEqual(ids.map((id) => store.judgement(id)!.score), ids.map((_, i) => (i % 3 ? 1 : -1)));
    assert.equal((loop.status() as { outage: boolean }).outage, false);
    assert.equal(store.turnsToJudge(100, Date.now() + 3_600_000).length, 0);
  } finally {
    await loop.stop();
    store.close();
    t.cleanup();
  }
});

test('a failure of one turn defers that turn alone; the others are judged', async () => {
  const t = tempDir('ocrl-judge-onefail-');
  const store = new Store(t.dir);
  sj.script = (req) => ({ text: verdictFor(req) });
  const loop = new JudgeLoop(store, new PrmJudge(new LlmBackend({ baseUrl: sj.url, model: 'judge', retries: 0 }), { m: 1 }),
    { hints: false, concurrency: 2, retryBaseMs: 60_000, sweepMs: 60_000 });
  try {
    loop.start();
    const bad = pairedTurn(store, 'bad', 'Thanks!');
    // a row the judge cannot read (damaged on disk): that turn fails, the judge itself is fine
    store.sql('UPDATE turns SET next_state_json = ? WHERE id = ?').run('{"role": "user", "messa', bad);
    const good = Array.from({ length: 5 }, (_, i) => pairedTurn(store, `g${i}`, 'Thanks!'));
    await until('the good turns judged', () => good.every((id) => store.judgement(id)?.status === 'done'));
    await until('the bad turn deferred', () => store.judgement(bad)?.status === 'deferred');
    assert.match(store.judgement(bad)!.last_error!, /SyntaxError/);
    assert.equal((loop.status() as { outage: boolean }).outage, false, 'one bad turn is not an outage');
  } finally {
    await loop.stop();
    store.close();
    t.cleanup();
  }
});

test('a restart judges what the last process left: turns paired but never judged, and deferred turns once due', async () => {
  const t = tempDir('ocrl-judge-restart-');
  let store = new Store(t.dir);
  const unjudged = [pairedTurn(store, 'r0', 'Thanks!'), pairedTurn(store, 'r1', 'No, I wanted a story about a dog.')];
  const parked = pairedTurn(store, 'r2', 'Thanks!');
  store.deferJudgement(parked, 'llm', 'BackendUnavailable: down', Date.now() + 300);
  store.close(); // the process "dies" here: nothing in memory survives
  store = new Store(t.dir);
  const loop = new JudgeLoop(store, new LexicalJudge(), { hints: true, sweepMs: 100 });
  try {
    loop.start();
    await until('the restart leftovers judged', () => [...unjudged, parked].every((id) => store.judgement(id)?.status === 'done'), 10_000);
    assert.deepEqual([...unjudged, parked].map((id) => store.judgement(id)!.score), [1, -1, 1]);
    assert.equal(store.judgement(unjudged[1])!.hint, 'The user wants a story about a dog.');
  } finally {
    await loop.stop();
    store.close();
    t.cleanup();
  }
});

test('through the server: a turn is judged right after the request that carries its next state, without a poll', async () => {
  const s = await startTestServer();
  const loop = new JudgeLoop(s.store, new LexicalJudge(), { hints: true, sweepMs: 60_000 });
  try {
    loop.start();
    const chat = (session: string, messages: unknown[]) => post(`${s.url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 8, temperature: 0 }, { 'x-session-id': session });
    const opening = [{ role: 'user', content: 'Once upon a time' }];
    const first = await chat('live', opening);
    await chat('live', [...opening, { role: 'assistant', content: first.json.choices[0].message.content }, { role: 'user', content: 'Thanks, I love it!' }]);
    const turn = s.store.turns('live')[0];
    await until('the first turn judged', () => s.store.judgement(turn.id)?.status === 'done', 10_000);
    assert.equal(s.store.judgement(turn.id)!.score, 1);
    const paired = s.store.pairedAt(turn.id)!;
    assert.equal(paired, s.store.turns('live')[1].created_at, 'paired when the next request began');
  } finally {
    await loop.stop();
    await s.close();
  }
});

test('stop() waits for the turns being judged; queued ones stay unjudged in the store for the next start', async () => {
  const t = tempDir('ocrl-judge-stop-');
  const store = new Store(t.dir);
  sj.script = (req) => ({ text: verdictFor(req), delayMs: 150 });
  const judge = new PrmJudge(new LlmBackend({ baseUrl: sj.url, model: 'judge', retries: 0, maxConcurrent: 8 }), { m: 1 });
  const loop = new JudgeLoop(store, judge, { hints: false, concurrency: 1, sweepMs: 60_000 });
  try {
    loop.start();
    const ids = Array.from({ length: 6 }, (_, i) => pairedTurn(store, `q${i}`, 'Thanks!'));
    await until('the first call reached the judge', () => sj.inFlight() > 0);
    await loop.stop();
    const done = ids.filter((id) => store.judgement(id)?.status === 'done').length;
    assert.ok(done >= 1 && done < 6, `${done} judged before stop returned`);
    assert.equal(store.turnsToJudge(100).length, 6 - done, 'the rest wait in the store');
    const again = new JudgeLoop(store, judge, { hints: false, concurrency: 6, sweepMs: 60_000 });
    again.start();
    await until('the rest judged by the next loop', () => ids.every((id) => store.judgement(id)?.status === 'done'));
    await again.stop();
  } finally {
    store.close();
    t.cleanup();
  }
});
