// --engine tinker against serve-tinker over loopback, on stories260K: the Tinker path samples,
// scores and trains exactly as the embedded engine does directly; the whole learning loop (API,
// capture, judge, trainer) runs unchanged on it with the same learning result; and the two CLI
// commands, `serve-tinker` and `serve --engine tinker`, do conversations → judgements → training
// steps → new versions served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { EmbeddedEngine } from '../../../src/engine/embedded/engine.ts';
import { TinkerServer } from '../../../src/engine/tinker/server.ts';
import { TinkerEngine } from '../../../src/engine/tinker/engine.ts';
import { collect, type TrainingEngine } from '../../../src/engine/types.ts';
import { Store } from '../../../src/store/store.ts';
import { startServer } from '../../../src/api/server.ts';
import { JudgeLoop } from '../../../src/judge/loop.ts';
import { LexicalJudge } from '../../../src/judge/judge.ts';
import { TrainerLoop } from '../../../src/trainer/loop.ts';
import { STORIES, tempDir } from '../../helpers/models.ts';
import { post } from '../../helpers/server.ts';
import { klToBase, referenceLogLikelihood } from '../../../src/bench/evaluate.ts';
import { stopProcess } from '../../helpers/processes.ts';

async function tinkerPair(): Promise<{ remote: EmbeddedEngine; engine: TinkerEngine; close(): Promise<void> }> {
  const remote = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const t = tempDir('ocrl-tinker-loop-');
  const server = await new TinkerServer({ engine: remote, modelName: 'stories260k-hf', dataDir: t.dir, port: 0 }).listen();
  const engine = await TinkerEngine.connect({ baseUrl: server.url, tokenizerDir: STORIES });
  return { remote, engine, close: async () => { await engine.close(); await server.close(); await remote.close(); t.cleanup(); } };
}

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

test('over serve-tinker, sampling, scoring and three PPO steps give what the embedded engine gives directly', { timeout: 120_000 }, async () => {
  const direct = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const pair = await tinkerPair();
  try {
    const t = pair.engine;
    const prompt = t.tokenizer.encode('Once upon a time');
    for (const params of [{ maxTokens: 24, temperature: 0, topP: 1, topK: 0 }, { maxTokens: 24, temperature: 0.9, topP: 0.95, topK: 40, seed: 7 }]) {
      const a = await collect(direct.sample(prompt, params)), b = await collect(t.sample(prompt, params));
      assert.deepEqual(b.ids, a.ids);
      close(b.logprobs, a.logprobs, 1e-5, 'sample log-probs');
      assert.equal(b.text, a.text);
      assert.equal(b.finishReason, a.finishReason);
    }
    const ref = await collect(direct.sample(prompt, { maxTokens: 20, temperature: 1, topP: 1, topK: 0, seed: 3 }));
    close((await t.score([{ promptIds: prompt, responseIds: ref.ids }], { temperature: 0.7 }))[0], (await direct.score([{ promptIds: prompt, responseIds: ref.ids }], { temperature: 0.7 }))[0], 1e-5, 'score at T=0.7');
    await direct.configureTraining({ rank: 4, seed: 1 });
    await t.configureTraining({ rank: 4, seed: 1 });
    const datum = { promptIds: prompt, responseIds: ref.ids, advantages: ref.ids.map((_, i) => (i % 3 === 0 ? -1 : 1)), behaviourLogprobs: ref.logprobs };
    for (let step = 0; step < 3; step++) {
      const fa = await direct.forwardBackward([datum], { kind: 'ppo' }), fb = await t.forwardBackward([datum], { kind: 'ppo' });
      close(fb.logprobs[0], fa.logprobs[0], 1e-4, `learner log-probs, step ${step}`);
      assert.ok(Math.abs(fb.loss - fa.loss) < 1e-4);
      assert.equal(fb.tokens, fa.tokens);
      const oa = await direct.optimStep({ learningRate: 5e-3 }), ob = await t.optimStep({ learningRate: 5e-3 });
      assert.ok(Math.abs(ob.gradNorm - oa.gradNorm) / oa.gradNorm < 1e-3, `grad norm ${ob.gradNorm} vs ${oa.gradNorm}`);
    }
    const va = await direct.saveWeights(), vb = await t.saveWeights();
    await direct.publish(va); await t.publish(vb);
    close((await t.score([{ promptIds: prompt, responseIds: ref.ids }]))[0], (await direct.score([{ promptIds: prompt, responseIds: ref.ids }]))[0], 1e-3, 'published weights');
    assert.equal((await collect(t.sample(prompt, { maxTokens: 4, temperature: 1, topP: 1, topK: 0 }))).policyVersion, vb);
  } finally {
    await pair.close(); await direct.close();
  }
});

const TRAIN = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily', 'One sunny day', 'Once upon a time, there was a big'];
const HELD_OUT = ['Once upon a time, a little', 'Sam and Max', 'One morning', 'There was a girl named'];

/** The dog-personalisation loop of test/trainer/learning.test.ts on `engine`; returns [base, final] held-out dog rates. */
async function dogLoop(engine: TrainingEngine, conversations: number): Promise<{ base: number; final: number; steps: number; version: number; kl: number; refBase: number; refFinal: number }> {
  const t = tempDir('ocrl-tinker-learn-');
  const store = new Store(t.dir);
  const server = await startServer({ engine, store, modelId: 'stories', port: 0 });
  try {
    const rate = async (weights: 'base' | 'published') => {
      let dog = 0, n = 0;
      for (const p of HELD_OUT) for (let i = 0; i < 15; i++) {
        const r = await collect(engine.sample(engine.tokenizer.encode(p), { maxTokens: 24, temperature: 1, topP: 1, topK: 0, seed: 1000 + i, weights }));
        n++; if (/\bdog/i.test(r.text)) dog++;
      }
      return dog / n;
    };
    const judge = new JudgeLoop(store, new LexicalJudge(), { hints: true, concurrency: 8 });
    const trainer = new TrainerLoop(store, engine, { method: 'binary', rewardBaseline: 'batch', keepNeutral: true, klCoef: 0, batchSize: 8, learningRate: 1e-2, lora: { rank: 8, alpha: 16, seed: 1 }, checkpointDir: `${t.dir}/ckpt`, maxStaleness: 8 });
    await trainer.init();
    const base = await rate('base');
    const refBase = await referenceLogLikelihood(engine);
    for (let c = 0; c < conversations; c++) {
      const prompt = TRAIN[c % TRAIN.length], h = { 'x-session-id': `conv-${c}` };
      const first = await post(`${server.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 24, temperature: 1, seed: c }, h);
      assert.equal(first.status, 200);
      const answer = first.json.choices[0].message.content as string;
      const feedback = /\bdog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.';
      const second = await post(`${server.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 4, temperature: 1 }, { ...h, 'x-session-done': '1' });
      assert.equal(second.status, 200);
      await judge.tick();
      await trainer.tick();
    }
    // quality next to the target: KL to the base model on neutral prompts, log-likelihood of a reference story
    return { base, final: await rate('published'), steps: trainer.step, version: trainer.version, kl: await klToBase(engine), refBase, refFinal: await referenceLogLikelihood(engine) };
  } finally {
    await server.close(); store.close(); t.cleanup();
  }
}

test('the whole learning loop runs unchanged on --engine tinker and learns as the embedded engine does directly', { timeout: 600_000 }, async () => {
  const direct = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const pair = await tinkerPair();
  try {
    const a = await dogLoop(direct, 48);
    const b = await dogLoop(pair.engine, 48);
    for (const [name, r] of [['embedded', a], ['over Tinker', b]] as const) {
      console.log(`# ${name}: held-out dog rate ${(r.base * 100).toFixed(0)}% → ${(r.final * 100).toFixed(0)}% in ${r.steps} steps; KL to base ${r.kl.toFixed(3)} nats/token; reference story log-likelihood ${r.refBase.toFixed(3)} → ${r.refFinal.toFixed(3)} per token`);
    }
    // the same loop, not the same bits (the test above holds the two paths to 1e-3, not to the bit): at lr 1e-2 the
    // runs drift apart by rounding, and a batch of all-dog answers has no signal and takes no step, so the step
    // counts may differ by one (measured: 5 and 6 on the session-6 kernels, 6 and 6 before)
    assert.ok(Math.abs(b.steps - a.steps) <= 1, `steps: embedded ${a.steps} vs Tinker ${b.steps}`);
    assert.equal(b.version, b.steps);
    assert.ok(b.final >= b.base + 0.25, `Tinker path: ${b.base} → ${b.final}`);
    assert.ok(Math.abs(b.final - a.final) <= 0.15, `embedded ${a.final} vs Tinker ${b.final}`);
    assert.ok(Math.abs(b.kl - a.kl) <= 0.25 * Math.max(a.kl, 0.1), `KL to base: embedded ${a.kl} vs Tinker ${b.kl}`);
  } finally {
    await pair.close(); await direct.close();
  }
});

/** Start a CLI command and wait for the line that names its URL. */
function startCli(args: string[], pattern: RegExp): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, ['bin/openclaw-rl.js', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    // generous on a loaded machine; a child that never starts is killed, not left holding the test file open
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`no start line from ${args[0]} in 180 s:\n${log}`)); }, 180_000);
    proc.stderr!.on('data', (c: Buffer) => {
      log += c.toString();
      const m = pattern.exec(log);
      if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${args[0]} exited with ${code}:\n${log}`)); });
  });
}

test('CLI: serve --engine tinker against openclaw-rl serve-tinker serves, judges, trains and serves new versions', { timeout: 600_000 }, async () => {
  const t = tempDir('ocrl-tinker-cli-');
  const procs: ChildProcess[] = [];
  try {
    const tinker = await startCli(['serve-tinker', '--model', STORIES, '--port', '0', '--threads', '1', '--data-dir', `${t.dir}/tinker`], /Tinker API for .* at (http:\/\/\S+)/);
    procs.push(tinker.proc);
    const serve = await startCli(['serve', '--engine', 'tinker', '--tinker-url', tinker.url, '--model', STORIES, '--port', '0', '--data-dir', `${t.dir}/serve`,
      '--judge', 'lexical', '--batch-size', '4', '--learning-rate', '1e-2', '--served-model-name', 'stories'], /at (http:\/\/\S+)\/v1/);
    procs.push(serve.proc);
    let lastVersion = 0;
    for (let c = 0; c < 24 && lastVersion < 2; c++) {
      const prompt = TRAIN[c % TRAIN.length], h = { 'x-session-id': `cli-${c}` };
      const first = await post(`${serve.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 16, temperature: 1, seed: c }, h);
      assert.equal(first.status, 200, first.text);
      lastVersion = first.json.policy_version;
      const answer = first.json.choices[0].message.content as string;
      const second = await post(`${serve.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: c % 2 ? 'I love it!' : 'No, I wanted a dog.' }], max_tokens: 4 }, { ...h, 'x-session-done': '1' });
      assert.equal(second.status, 200);
      await new Promise((r) => setTimeout(r, 300));
    }
    // the judge and trainer run in the background: wait for two published steps
    let status: any = null;
    for (let i = 0; i < 480; i++) {
      status = await (await fetch(`${serve.url}/admin/status`)).json();
      if ((status.trainer?.policyVersion ?? 0) >= 2) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.ok(status.trainer.policyVersion >= 2, JSON.stringify(status.trainer) + serve.log());
    assert.ok(status.trainer.samples.trained >= 8);
    const after = await post(`${serve.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8 });
    assert.equal(after.status, 200);
    assert.ok(after.json.policy_version >= 2);
    assert.match(serve.log(), /serving 'stories' \(llama, tinker/);
  } finally {
    for (const p of procs.reverse()) { await stopProcess(p, 'SIGTERM'); }
    t.cleanup();
  }
});
