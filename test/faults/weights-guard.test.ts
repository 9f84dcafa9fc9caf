// Destroyed training steps never reach clients: the engine undoes an optimizer step that breaks the
// weights (a 1e30 learning rate), the trainer refuses to publish a version that fails the canary and
// rolls back to its checkpoint, and every answer served meanwhile is valid OpenAI output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { STORIES } from '../helpers/models.ts';

test('engine: an optimizer step with learning rate 1e30 is undone — adapter, moments and step count as before', async () => {
  const rt = new EmbeddedRuntime(STORIES, { kernel: 'ts' });
  try {
    rt.configureTraining({ rank: 4, alpha: 8, seed: 4 });
    const prompt = rt.tokenizer.encode('Once upon a time');
    const datum = { promptIds: prompt, responseIds: rt.tokenizer.encode(' there was a dog.').slice(1) };
    rt.forwardBackward([datum], { kind: 'cross_entropy' });
    assert.equal(rt.optimStep({ learningRate: 1e-2 }).skipped, false);
    const before = [...rt.trainer!.adapter.tensors()].map((t) => Float32Array.from(t.data));
    const moments = rt.trainer!.optimizer.m.map((m) => Float32Array.from(m));
    rt.forwardBackward([datum], { kind: 'cross_entropy' });
    const step = rt.optimStep({ learningRate: 1e30 });
    assert.equal(step.skipped, true);
    assert.match(step.reason!, /non-finite weights|moved the weights by/);
    assert.equal(step.step, 1, 'the refused step is not counted');
    [...rt.trainer!.adapter.tensors()].forEach((t, i) => assert.deepEqual(t.data, before[i]));
    rt.trainer!.optimizer.m.forEach((m, i) => assert.deepEqual(m, moments[i]));
    // and the trained adapter still answers with finite log-probs
    const v = rt.saveWeights();
    rt.publish(v);
    const r = rt.generate(prompt, { maxTokens: 16, temperature: 1, topP: 1, topK: 0, seed: 1, ignoreEos: true });
    assert.ok(r.logprobs.every(Number.isFinite));
  } finally {
    await rt.close();
  }
});

/** One scripted conversation; returns every response body so the caller can check it. */
async function conversation(s: TestServer, c: number, bodies: unknown[]): Promise<void> {
  const h = { 'x-session-id': `g-${c}` };
  const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 16, logprobs: true, top_logprobs: 2, seed: c }, h);
  bodies.push(first);
  const answer = first.json.choices[0].message.content as string;
  const feedback = /\bdog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.';
  bodies.push(await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 8, logprobs: true, stream: true }, { ...h, 'x-session-done': '1' }));
}

/** Valid OpenAI output: status 200 and every log-prob a finite number (JSON has no NaN: it would be null). */
function assertValid(r: { status: number; text: string }): void {
  assert.equal(r.status, 200, r.text);
  assert.doesNotMatch(r.text, /"logprob":\s*null|"logprob":\s*"?NaN/, 'a null or NaN log-prob was sent');
  for (const m of r.text.matchAll(/"logprob":\s*(-?[\d.e+-]+)/g)) assert.ok(Number.isFinite(Number(m[1])), m[0]);
}

test('trainer: a version that fails the canary is never published; training rolls back to the checkpoint and every answer stays valid', { timeout: 120_000 }, async () => {
  const s = await startTestServer();
  const log: string[] = [];
  try {
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false, concurrency: 8 });
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', rewardBaseline: 'none', batchSize: 4, learningRate: 1e-2, lora: { rank: 4, alpha: 8, seed: 5 }, checkpointDir: `${s.dataDir}/ckpt`, log: (l) => log.push(l) });
    await trainer.init();
    const bodies: { status: number; text: string }[] = [];
    for (let c = 0; c < 4; c++) { await conversation(s, c, bodies); await judge.tick(); await trainer.tick(); }
    assert.equal(trainer.step, 1);
    const good = trainer.version;
    assert.equal((await s.engine.versions()).published, good);
    // from now on every step "destroys" the weights as far as the canary can tell
    (trainer.o as { maxCanaryDrop: number }).maxCanaryDrop = -100;
    for (let c = 4; c < 8; c++) { await conversation(s, c, bodies); await judge.tick(); await trainer.tick(); }
    assert.match(log.join('\n'), /step 2 REJECTED by the weights guard \(canary log-probs fell by/);
    assert.equal((await s.engine.versions()).published, good, 'the published version is unchanged');
    assert.equal(trainer.step, 1, 'training is back at the checkpointed step');
    assert.equal((trainer.status() as { rollbacks: number }).rollbacks, 1);
    const rejected = s.store.db.prepare(`SELECT COUNT(*) AS n FROM samples WHERE status = 'rejected' AND reason LIKE 'weights guard:%'`).get() as { n: number };
    assert.equal(Number(rejected.n), 4);
    const recorded = s.store.db.prepare('SELECT version FROM weights_versions ORDER BY version').all().map((r) => Number((r as { version: number }).version));
    assert.deepEqual(recorded, [good], 'the refused version was never recorded as served');
    // answers before, during and after the refused step are all valid
    for (let c = 8; c < 10; c++) await conversation(s, c, bodies);
    bodies.forEach(assertValid);
  } finally {
    await s.close();
  }
});
