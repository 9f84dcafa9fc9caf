// The SFT loop on the real stories260K engine: it lowers the held-out loss, resumes exactly from a
// checkpoint, and its adapter merged into full weights scores like base + adapter.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { encodeChatExample, runSft, exampleToDatum, type EncodedExample, type SftProgress } from '../../src/trainer/sft.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);

/** Requests and answers that follow them: the base model has no reason to produce these answers. */
export function chatExamples(tok: EmbeddedEngine['tokenizer']): EncodedExample[] {
  const names = ['Tom', 'Lily', 'Ben', 'Sue', 'Max', 'Anna', 'Tim', 'Mia'];
  const animals = ['dog', 'cat', 'bird', 'fish', 'bunny'];
  const out: EncodedExample[] = [];
  for (const n of names) for (const a of animals) {
    out.push(encodeChatExample(tok, { messages: [
      { role: 'user', content: `Tell me about a ${a} named ${n}.` },
      { role: 'assistant', content: `${n} was a happy ${a}. ${n} liked to play in the park with a red ball.` },
    ] }));
  }
  return out;
}

const OPTS = { epochs: 2, batchTokens: 200, evalFraction: 0.2, seed: 5, learningRate: 2e-3 };

test('SFT with LoRA lowers the loss on held-out conversations, and reports progress with tokens/s and eval loss', async () => {
  const engine = await EmbeddedEngine.load(STORIES, { threads: 1 });
  try {
    const examples = chatExamples(engine.tokenizer);
    await engine.configureTraining({ rank: 8, alpha: 16, seed: 1 });
    const events: SftProgress[] = [];
    const r = await runSft(engine, examples, { ...OPTS, onProgress: (p) => events.push(p) });
    assert.equal(r.evalExamples, 8);
    assert.equal(r.trainExamples, 32);
    assert.equal(r.evalLossPerEpoch.length, 2);
    assert.ok(r.evalLossBefore! > 1, `before ${r.evalLossBefore}`);
    assert.ok(r.evalLossPerEpoch[1] < 0.5 * r.evalLossBefore!, `eval loss ${r.evalLossBefore} → ${r.evalLossPerEpoch}`);
    const steps = events.filter((e) => e.event === 'step');
    assert.equal(steps.length, r.steps);
    assert.ok(steps.every((e) => e.tokensPerSecond > 0 && Number.isFinite(e.loss) && e.totalSteps === r.steps));
    assert.equal(events.filter((e) => e.event === 'eval').length, 3); // before training and after each epoch
    // the base weights (what is published) are untouched by training
    const base = await engine.score([exampleToDatum(examples[0])], { adapter: 'base' });
    const published = await engine.score([exampleToDatum(examples[0])]);
    assert.deepEqual(published, base);
  } finally {
    await engine.close();
  }
});

for (const [label, settings] of [['LoRA', { rank: 4, seed: 2 }], ['full-parameter', null]] as const) {
test(`SFT (${label}) resumed from a checkpoint after an interruption ends with the same weights as an uninterrupted run`, async () => {
  const data = async (engine: EmbeddedEngine) => chatExamples(engine.tokenizer);
  const finalScores = async (engine: EmbeddedEngine, ex: EncodedExample[]) => engine.score(ex.slice(0, 5).map(exampleToDatum), { adapter: 'current' });

  const a = await EmbeddedEngine.load(STORIES, { threads: 1 });
  after(() => a.close());
  const exA = await data(a);
  await a.configureTraining(settings);
  const ra = await runSft(a, exA, OPTS);
  const expected = await finalScores(a, exA);
  await a.close();

  const dir = join(tmp.dir, `ckpt-${label}`);
  const b = await EmbeddedEngine.load(STORIES, { threads: 1 });
  after(() => b.close());
  const exB = await data(b);
  await b.configureTraining(settings);
  const stop = new AbortController();
  await assert.rejects(runSft(b, exB, { ...OPTS, checkpointDir: dir, checkpointEvery: 2, signal: stop.signal, onProgress: (p) => { if (p.step === 5) stop.abort(); } }), /stopped/);
  await b.close();

  // a fresh process: a new engine, configured fresh, resumes from the folder
  const c = await EmbeddedEngine.load(STORIES, { threads: 1 });
  after(() => c.close());
  const exC = await data(c);
  await c.configureTraining(settings && { ...settings, seed: 99 });
  const rc = await runSft(c, exC, { ...OPTS, checkpointDir: dir, resume: true });
  assert.equal(rc.resumedFromStep, 5);
  assert.equal(rc.steps, ra.steps);
  assert.deepEqual(rc.evalLossPerEpoch.length, ra.evalLossPerEpoch.length);
  const got = await finalScores(c, exC);
  got.forEach((lp, k) => lp.forEach((x, t) => assert.ok(Math.abs(x - expected[k][t]) < 1e-5, `datum ${k} token ${t}: ${x} vs ${expected[k][t]}`)));
  // a checkpoint of other settings is refused
  await assert.rejects(runSft(c, exC, { ...OPTS, seed: 6, checkpointDir: dir, resume: true }), /different run/);
});
}
