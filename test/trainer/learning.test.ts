// The whole loop on stories260K: conversations through the HTTP API → next states → lexical judge →
// samples → PPO steps → published versions, while requests keep flowing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { collect } from '../../src/engine/types.ts';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { STORIES } from '../helpers/models.ts';

const TRAIN = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily', 'One sunny day', 'Once upon a time, there was a big'];
const HELD_OUT = ['Once upon a time, a little', 'Sam and Max', 'One morning', 'There was a girl named'];

/** Share of held-out samples (k per prompt, T = 1, fixed seeds) that mention a dog. */
async function dogRate(s: TestServer, weights: 'base' | 'published', k = 25): Promise<number> {
  let dog = 0, n = 0;
  for (const p of HELD_OUT) for (let i = 0; i < k; i++) {
    const r = await collect(s.engine.sample(s.engine.tokenizer.encode(p), { maxTokens: 24, temperature: 1, topP: 1, topK: 0, seed: 1000 + i, weights }));
    n++;
    if (/\bdog/i.test(r.text)) dog++;
  }
  return dog / n;
}

/** A scripted user who wants stories about a dog: one story request, one piece of feedback, done. */
async function conversation(s: TestServer, c: number): Promise<number> {
  const prompt = TRAIN[c % TRAIN.length];
  const h = { 'x-session-id': `conv-${c}` };
  const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 24, temperature: 1, seed: c }, h);
  assert.equal(first.status, 200);
  const answer = first.json.choices[0].message.content as string;
  const feedback = /\bdog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.';
  const second = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 4, temperature: 1 }, { ...h, 'x-session-done': '1' });
  assert.equal(second.status, 200);
  return first.json.policy_version;
}

test('the loop learns what the user wants: the held-out dog rate rises well above the base model', { timeout: 300_000 }, async () => {
  const s = await startTestServer();
  try {
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: true, concurrency: 8 });
    // The loop's mechanics, not the recipe's quality: β = 0 and lr 5e-3. With the default β = 0.3 (chosen on the chat
    // model) binary on stories260K's 8 steps lands anywhere from 1% to 42% depending on the LoRA seed and the kernels'
    // rounding; at β = 0, lr 5e-3 the three LoRA seeds tried reach 90 / 82 / 47% (lr 1e-2: 100 / 15%).
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', rewardBaseline: 'batch', batchSize: 8, learningRate: 5e-3, klCoef: 0, lora: { rank: 8, alpha: 16, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt`, maxStaleness: 8 });
    await trainer.init();
    const base = await dogRate(s, 'base');
    for (let c = 0; c < 64; c++) {
      await conversation(s, c);
      await judge.tick();
      await trainer.tick();
    }
    const final = await dogRate(s, 'published');
    console.log(`# held-out "dog" rate: base ${(base * 100).toFixed(0)}% → ${(final * 100).toFixed(0)}% after 64 conversations, ${trainer.step} steps, version ${trainer.version}`);
    assert.ok(trainer.step >= 6, `only ${trainer.step} steps`);
    assert.equal(trainer.version, trainer.step);
    assert.ok(final >= base + 0.3, `dog rate ${final} vs base ${base}`);
    // every sample is accounted for, the steps are recorded, and the versions are live
    const steps = s.store.db.prepare(`SELECT COUNT(*) AS n FROM training_steps WHERE status = 'published'`).get() as { n: number };
    assert.equal(Number(steps.n), trainer.step);
    const status = trainer.status() as { samples: Record<string, number> };
    // each sample is trained, or set aside as a batch without signal (all of one reward once the policy has learned)
    assert.equal((status.samples.trained ?? 0) + (status.samples.skipped ?? 0), 64);
    assert.ok(status.samples.trained >= 6 * 8, `trained ${status.samples.trained}`);
    const v = await s.engine.versions();
    assert.equal(v.published, trainer.version);
  } finally {
    await s.close();
  }
});

test('zero downtime: a client streams continuously while the loop trains and publishes; nothing fails, versions never go back', { timeout: 300_000 }, async () => {
  const s = await startTestServer();
  try {
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false, concurrency: 8 });
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 4, learningRate: 5e-3, lora: { rank: 4, alpha: 8, seed: 2 }, checkpointDir: `${s.dataDir}/ckpt` });
    await trainer.init();
    judge.start();
    trainer.start();
    let stop = false;
    const latencies: number[] = [];
    const versions: number[] = [];
    const streamer = (async () => {
      for (let i = 0; !stop; i++) {
        const t0 = performance.now();
        const r = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-session-id': 'watcher' }, body: JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: `Once upon a time ${i}` }], max_tokens: 16, stream: true, temperature: 1 }) });
        assert.equal(r.status, 200);
        const text = await r.text();
        assert.match(text, /data: \[DONE\]/);
        latencies.push(performance.now() - t0);
      }
    })();
    for (let c = 0; c < 40; c++) versions.push(await conversation(s, c));
    await new Promise((r) => setTimeout(r, 600));
    stop = true;
    await streamer;
    await judge.stop();
    await trainer.stop();
    assert.ok(trainer.step >= 3, `only ${trainer.step} steps`);
    for (let i = 1; i < versions.length; i++) assert.ok(versions[i] >= versions[i - 1], `versions went back: ${versions}`);
    assert.ok(versions.at(-1)! >= 1, 'requests were served by trained versions');
    latencies.sort((a, b) => a - b);
    const p50 = latencies[latencies.length >> 1], max = latencies.at(-1)!;
    console.log(`# streaming during training: ${latencies.length} requests, p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms, ${trainer.step} steps`);
    assert.ok(max < 2000, `a request took ${max} ms`);
  } finally {
    await s.close();
  }
});

test('restart: the trainer resumes from its checkpoint under a new version number, and samples of steps after it are queued again', { timeout: 120_000 }, async () => {
  const s = await startTestServer();
  const after: (() => Promise<void>)[] = [];
  try {
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false, concurrency: 8 });
    const first = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 4, learningRate: 5e-3, lora: { rank: 4, alpha: 8, seed: 3 }, checkpointDir: `${s.dataDir}/ckpt`, checkpointEvery: 2 });
    await first.init();
    for (let c = 0; c < 12; c++) { await conversation(s, c); await judge.tick(); await first.tick(); }
    assert.equal(first.step, 3); // checkpoints after steps 2 (and not 3): step 3 dies with the "process"
    const lostSamples = s.store.db.prepare(`SELECT COUNT(*) AS n FROM samples WHERE step = 3`).get() as { n: number };
    assert.equal(Number(lostSamples.n), 4);
    // a fresh engine and a new trainer on the same store and checkpoint folder, as after a restart
    const engine2 = await EmbeddedEngine.load(STORIES);
    after.push(() => engine2.close());
    const second = new TrainerLoop(s.store, engine2, { method: 'binary', batchSize: 4, learningRate: 5e-3, lora: { rank: 4, alpha: 8, seed: 3 }, checkpointDir: `${s.dataDir}/ckpt`, checkpointEvery: 2 });
    await second.init();
    assert.equal(second.step, 2);
    // the checkpoint's weights (version 2) come back under a new number: version 3 was served before the "crash"
    assert.equal(second.version, 4);
    assert.equal(second.pendingCount(), 4, 'the samples of the lost step are pending again');
    const lost = s.store.db.prepare(`SELECT status FROM training_steps WHERE step = 3`).get() as { status: string };
    assert.equal(lost.status, 'lost');
    await second.tick();
    assert.equal(second.step, 3);
    const trained = s.store.db.prepare(`SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id) AS d FROM samples WHERE status = 'trained'`).get() as { n: number; d: number };
    assert.equal(Number(trained.n), 12);
    assert.equal(Number(trained.d), 12);
    assert.equal((await engine2.versions()).published, 5);
  } finally {
    for (const f of after) await f();
    await s.close();
  }
});
