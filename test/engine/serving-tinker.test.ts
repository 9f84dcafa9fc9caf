// `--trainer tinker` behind `--engine vllm|sglang`: serving on a TEST DOUBLE of vLLM / SGLang
// (test/helpers/serving-doubles.ts, their documented wire formats with the real stories260K engine
// behind them), training on a real `serve-tinker` over the Tinker HTTP API. Each version is stored
// as a named sampler checkpoint, downloaded through the signed archive URL (without the API key) as
// a PEFT folder, and loaded on the serving engine under its own name; what the serving engine then
// samples with is exactly what Tinker trained. End to end through the CLI: conversations →
// judgements → training steps on Tinker → new versions served by the serving engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startServingDouble } from '../helpers/serving-doubles.ts';
import { ServingEngine } from '../../src/engine/serving.ts';
import { VllmBackend } from '../../src/engine/vllm/backend.ts';
import { SglangBackend } from '../../src/engine/sglang/backend.ts';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { TinkerServer } from '../../src/engine/tinker/server.ts';
import { TinkerEngine } from '../../src/engine/tinker/engine.ts';
import { collect } from '../../src/engine/types.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';
import { stopProcess } from '../helpers/processes.ts';

const PARAMS = { maxTokens: 16, temperature: 0.8, topP: 1, topK: 0, seed: 4 };

test('vllm + tinker trainer: each version is downloaded from Tinker as a PEFT adapter, loaded under a new name, and served with the log-probs Tinker trained', { timeout: 180_000 }, async () => {
  const d = await startServingDouble('vllm');
  const remote = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const t = tempDir('ocrl-serving-tinker-');
  const seen: { path: string; key: string | undefined }[] = [];
  const tinker = new TinkerServer({ engine: remote, modelName: 'stories260k-hf', dataDir: join(t.dir, 'tinker'), port: 0, apiKey: 'tinker-secret' });
  const handle = tinker.handle.bind(tinker);
  tinker.handle = (req, res) => { seen.push({ path: req.url ?? '', key: req.headers['x-api-key'] as string | undefined }); return handle(req, res); };
  const server = await tinker.listen();
  const trainer = await TinkerEngine.connect({ baseUrl: server.url, apiKey: 'tinker-secret', tokenizerDir: STORIES, samplerCheckpoints: 'named' });
  const e = new ServingEngine(await VllmBackend.connect({ baseUrl: `${d.url}/v1` }), trainer, { adapterDir: join(t.dir, 'adapters') });
  try {
    const prompt = e.tokenizer.encode('Once upon a time');
    await e.configureTraining({ rank: 4, seed: 3 });
    const ref = await collect(e.sample(prompt, PARAMS));
    assert.equal(ref.policyVersion, 0);
    const datum = { promptIds: prompt, responseIds: ref.ids, advantages: ref.ids.map((_, i) => (i % 2 ? 1 : -1)), behaviourLogprobs: ref.logprobs };
    const step = async () => { await e.forwardBackward([datum], { kind: 'ppo' }); await e.optimStep({ learningRate: 2e-2 }); return e.saveWeights(); };
    const v1 = await step();
    assert.deepEqual(d.loads, [`policy-v${v1}`]);
    assert.ok(existsSync(join(t.dir, 'adapters', `policy-v${v1}`, 'adapter_config.json')));
    // the version is a named sampler checkpoint on the Tinker server, fetched through its signed archive URL without the key
    assert.ok(seen.some((s) => /\/checkpoints\/sampler_weights\/openclaw-rl-v1-[a-z0-9]+\/archive$/.test(s.path) && s.key === 'tinker-secret'));
    const download = seen.find((s) => s.path.startsWith('/api/v1/checkpoint_archives/'));
    assert.ok(download, 'the archive was downloaded from the signed URL');
    assert.equal(download.key, undefined, 'the API key is not sent to the signed URL');
    await e.publish(v1);
    const served = await collect(e.sample(prompt, PARAMS));
    assert.equal(served.policyVersion, v1);
    assert.ok(d.requests.some((r) => r.body?.model === `policy-v${v1}`));
    // the adapter vLLM serves is the one Tinker trained: the same log-probs, and different from the base's
    const [viaServing] = await e.score([{ promptIds: prompt, responseIds: ref.ids }]);
    const [viaTinker] = await trainer.score([{ promptIds: prompt, responseIds: ref.ids }], { adapter: v1 });
    const [base] = await e.score([{ promptIds: prompt, responseIds: ref.ids }], { adapter: 'base' });
    viaServing.forEach((lp, i) => assert.ok(Math.abs(lp - viaTinker[i]) < 1e-5, `token ${i}: ${lp} vs ${viaTinker[i]}`));
    assert.ok(viaServing.some((lp, i) => Math.abs(lp - base[i]) > 1e-3), 'training changed the served log-probs');
    // a second version replaces the first on the server once nothing uses it
    const v2 = await step();
    await e.publish(v2);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(d.loads, [`policy-v${v1}`, `policy-v${v2}`]);
    assert.deepEqual(d.unloads, [`policy-v${v1}`]);
    // an ephemeral Tinker version (the default) cannot be downloaded, and says why
    const plain = await TinkerEngine.connect({ baseUrl: server.url, apiKey: 'tinker-secret', tokenizerDir: STORIES });
    try {
      await plain.configureTraining({ rank: 4 });
      const v = await plain.saveWeights();
      await assert.rejects(plain.saveAdapter(join(t.dir, 'x'), v), /ephemeral Tinker sampler/);
    } finally { await plain.close(); }
  } finally {
    await e.close(); await server.close(); await remote.close(); await d.close(); t.cleanup();
  }
});

function startCli(args: string[], pattern: RegExp): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, ['bin/openclaw-rl.js', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line from ${args[0]}:\n${log}`)), 90_000);
    proc.stderr!.on('data', (c: Buffer) => {
      log += c.toString();
      const m = pattern.exec(log);
      if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${args[0]} exited with ${code}:\n${log}`)); });
  });
}

test('CLI: serve --engine sglang --trainer tinker serves on SGLang, trains on serve-tinker, and serves the new versions from SGLang', { timeout: 300_000 }, async () => {
  const d = await startServingDouble('sglang');
  const remote = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const t = tempDir('ocrl-serving-tinker-cli-');
  const tinker = await new TinkerServer({ engine: remote, modelName: 'stories260k-hf', dataDir: join(t.dir, 'tinker'), port: 0 }).listen();
  let proc: ChildProcess | null = null;
  try {
    const serve = await startCli(['serve', '--engine', 'sglang', '--serving-url', d.url, '--trainer', 'tinker', '--tinker-url', tinker.url, '--model', STORIES,
      '--port', '0', '--data-dir', join(t.dir, 'serve'), '--judge', 'lexical', '--batch-size', '4', '--learning-rate', '1e-2', '--served-model-name', 'stories', '--threads', '1'],
    /at (http:\/\/\S+)\/v1/);
    proc = serve.proc;
    const prompts = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily'];
    let status: any = null;
    for (let c = 0; c < 24; c++) {
      const prompt = prompts[c % prompts.length], h = { 'x-session-id': `st-${c}` };
      const first = await post(`${serve.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 12, temperature: 1, seed: c }, h);
      assert.equal(first.status, 200, first.text);
      const answer = first.json.choices[0].message.content as string;
      const second = await post(`${serve.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: c % 2 ? 'I love it!' : 'No, I wanted a dog.' }], max_tokens: 4 }, { ...h, 'x-session-done': '1' });
      assert.equal(second.status, 200);
      status = await (await fetch(`${serve.url}/admin/status`)).json();
      if ((status.trainer?.policyVersion ?? 0) >= 2) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    for (let i = 0; i < 120 && (status.trainer?.policyVersion ?? 0) < 2; i++) {
      await new Promise((r) => setTimeout(r, 500));
      status = await (await fetch(`${serve.url}/admin/status`)).json();
    }
    assert.ok(status.trainer.policyVersion >= 2, JSON.stringify(status.trainer) + serve.log());
    const after = await post(`${serve.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8 });
    assert.equal(after.status, 200);
    assert.ok(after.json.policy_version >= 2);
    // the versions reached SGLang as adapters under their own names, and it sampled with the newest
    assert.ok(d.loads.includes(`policy-v${after.json.policy_version}`), d.loads.join(','));
    assert.ok(d.requests.some((r) => r.path === '/generate' && r.body.lora_path === `policy-v${after.json.policy_version}`));
    assert.match(serve.log(), /serving 'stories' \(llama, sglang/);
  } finally {
    if (proc) { await stopProcess(proc, 'SIGTERM'); }
    await tinker.close(); await remote.close(); await d.close(); t.cleanup();
  }
});

test('CLI: --trainer tinker is refused without --engine vllm|sglang or without --tinker-url, before anything loads', { timeout: 60_000 }, async () => {
  const run = (args: string[]) => new Promise<{ code: number | null; err: string }>((resolve) => {
    const p = spawn(process.execPath, ['bin/openclaw-rl.js', 'serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TINKER_BASE_URL: '' } });
    let err = '';
    p.stderr!.on('data', (c: Buffer) => { err += c; });
    p.on('exit', (code) => resolve({ code, err }));
  });
  const a = await run(['--trainer', 'tinker', '--tinker-url', 'http://127.0.0.1:1', '--model', STORIES]);
  assert.equal(a.code, 2);
  assert.match(a.err, /--trainer tinker goes with --engine vllm or sglang/);
  const b = await run(['--engine', 'vllm', '--serving-url', 'http://127.0.0.1:1/v1', '--trainer', 'tinker', '--model', STORIES]);
  assert.equal(b.code, 2);
  assert.match(b.err, /--trainer tinker needs --tinker-url/);
});
