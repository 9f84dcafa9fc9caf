// The openclaw-rl command as a user runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORIES } from './helpers/models.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/openclaw-rl.js', import.meta.url));
const ref = JSON.parse(readFileSync(join(STORIES, 'reference.json'), 'utf8'));

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: { ...process.env, OPENCLAW_RL_MODEL: '' } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

test('generate --json: greedy ids, token pieces, log-probs, text and finish reason', async () => {
  const r = await cli('generate', '--model', STORIES, '--prompt', '', '--max-tokens', '30', '--temperature', '0', '--json');
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.ids, ref.greedy_from_bos.generated_ids.slice(0, 30));
  assert.equal(out.tokens.length, 30);
  assert.deepEqual(out.tokens.slice(0, 3), ['▁Once', '▁upon', '▁a']);
  assert.equal(out.logprobs.length, 30);
  assert.ok(out.logprobs.every((x: number) => x <= 0));
  assert.ok(ref.greedy_from_bos.text.startsWith(out.text));
  assert.equal(out.finishReason, 'length');
});

test('generate --messages renders the chat template (plain-text fallback for stories260K); --seed is reproducible', async () => {
  const args = ['generate', '--model', STORIES, '--messages', JSON.stringify([{ role: 'user', content: 'Once upon a time' }]), '--max-tokens', '12', '--seed', '4', '--json'];
  const [a, b] = await Promise.all([cli(...args), cli(...args)]);
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(JSON.parse(a.stdout).ids, JSON.parse(b.stdout).ids);
});

test('score --prompt-ids/--response-ids scores exactly the given ids; --prompt/--response tokenizes', async () => {
  const byIds = await cli('score', '--model', STORIES, '--prompt-ids', '1,403,407', '--response-ids', '261,378', '--json');
  assert.equal(byIds.code, 0, byIds.stderr);
  const a = JSON.parse(byIds.stdout);
  assert.deepEqual(a.ids, [261, 378]);
  const byText = await cli('score', '--model', STORIES, '--prompt', 'Once upon', '--response', ' a time', '--json');
  const b = JSON.parse(byText.stdout);
  assert.deepEqual(b.ids, [261, 378]);
  assert.deepEqual(b.logprobs, a.logprobs);
});

test('--adapter DIR: generate and score use base + a PEFT adapter (written here by the engine itself)', async () => {
  const { EmbeddedRuntime } = await import('../src/engine/embedded/runtime.ts');
  const { tempDir } = await import('./helpers/models.ts');
  const t = tempDir();
  const rt = new EmbeddedRuntime(STORIES);
  try {
    rt.configureTraining({ rank: 4, alpha: 8, seed: 1 });
    const prompt = [1, 403, 407, 261, 378];
    const target = rt.tokenizer.encode('Once upon a time, a purple whale sang.').slice(prompt.length);
    for (let i = 0; i < 20; i++) { rt.forwardBackward([{ promptIds: prompt, responseIds: target }], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 1e-2 }); }
    const dir = join(t.dir, 'adapter');
    rt.saveAdapter(dir, rt.saveWeights());
    const ids = target.join(',');
    const base = JSON.parse((await cli('score', '--model', STORIES, '--prompt-ids', prompt.join(','), '--response-ids', ids, '--json')).stdout);
    const tuned = JSON.parse((await cli('score', '--model', STORIES, '--adapter', dir, '--prompt-ids', prompt.join(','), '--response-ids', ids, '--json')).stdout);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    assert.ok(sum(tuned.logprobs) > sum(base.logprobs) + 5, `adapter log-likelihood ${sum(tuned.logprobs)} vs base ${sum(base.logprobs)}`);
    const gen = await cli('generate', '--model', STORIES, '--adapter', dir, '--prompt', 'Once upon a time', '--temperature', '0', '--max-tokens', '14', '--json');
    assert.equal(gen.code, 0, gen.stderr);
    assert.match(JSON.parse(gen.stdout).text, /purple whale/);
    const bad = await cli('generate', '--model', STORIES, '--adapter', join(t.dir, 'nope'), '--prompt', 'x');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--adapter: no folder at /);
    const notAnAdapter = await cli('generate', '--model', STORIES, '--adapter', t.dir, '--prompt', 'x');
    assert.equal(notAnAdapter.code, 2);
    assert.match(notAnAdapter.stderr, /--adapter: adapter_config\.json not found in /);
  } finally {
    await rt.close();
    t.cleanup();
  }
});

test('usage errors exit 2 with a clear message; a bad model folder exits 1 naming the problem', async () => {
  const noModel = await cli('generate', '--prompt', 'x');
  assert.equal(noModel.code, 2);
  assert.match(noModel.stderr, /no model given: pass --model DIR/);
  const both = await cli('generate', '--model', STORIES);
  assert.match(both.stderr, /exactly one of --prompt TEXT .* or --messages JSON/);
  const badNum = await cli('generate', '--model', STORIES, '--prompt', 'x', '--temperature', 'hot');
  assert.equal(badNum.code, 2);
  assert.match(badNum.stderr, /--temperature expects a number ≥ 0, got 'hot'/);
  const badLag = await cli('serve', '--model', STORIES, '--max-lag', '1.5');
  assert.equal(badLag.code, 2);
  assert.match(badLag.stderr, /--max-lag is a whole number of batches \(0, 1, 2, …\) or off, got '1.5'/);
  const unknown = await cli('frobnicate');
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);
  const badIds = await cli('score', '--model', STORIES, '--prompt-ids', '1,x', '--response-ids', '2');
  assert.match(badIds.stderr, /--prompt-ids expects comma-separated token ids/);
  const outOfVocab = await cli('score', '--model', STORIES, '--prompt-ids', '1', '--response-ids', '9999');
  assert.equal(outOfVocab.code, 1);
  assert.match(outOfVocab.stderr, /token id 9999 is outside the vocabulary/);
});

test('serve --config FILE: options from a JSON file, command-line flags win', async () => {
  const { tempDir } = await import('./helpers/models.ts');
  const { writeFileSync } = await import('node:fs');
  const { spawn } = await import('node:child_process');
  const t = tempDir();
  try {
    const file = join(t.dir, 'openclaw-rl.json');
    writeFileSync(file, JSON.stringify({ model: STORIES, port: 0, 'data-dir': join(t.dir, 'data'), judge: 'none', method: 'binary', 'no-train': true }));
    const line = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, [BIN, 'serve', '--config', file, '--judge', 'lexical'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      p.stderr!.on('data', (d) => { log += d; if (/serving/.test(log)) { p.kill('SIGTERM'); resolve(log); } });
      p.on('exit', () => resolve(log));
      setTimeout(() => { p.kill('SIGKILL'); reject(new Error(log)); }, 30_000);
    });
    assert.match(line, /judge: lexical, learning: off/);
    const bad = await cli('serve', '--config', join(t.dir, 'missing.json'));
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /config file not found/);
  } finally {
    t.cleanup();
  }
});

test('--model with a Hugging Face id: offline, a missing model fails with a message saying what to do', async () => {
  const { tempDir } = await import('./helpers/models.ts');
  const t = tempDir();
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, 'generate', '--model', 'HuggingFaceTB/SmolLM2-135M-Instruct', '--prompt', 'hi'], { env: { ...process.env, HF_HUB_OFFLINE: '1', HF_HUB_CACHE: t.dir } }).catch((e) => e);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /'HuggingFaceTB\/SmolLM2-135M-Instruct' is not in the Hugging Face cache and downloads are off \(offline mode\)/);
    assert.match(r.stderr, /pass --model \/path\/to\/the\/folder/);
    const notAnId = await cli('generate', '--model', 'no such thing', '--prompt', 'hi');
    assert.match(notAnId.stderr, /neither a model folder nor a Hugging Face model id/);
  } finally {
    t.cleanup();
  }
});

test('openclaw-config prints the provider, model and plugin config, and the install commands', async () => {
  const r = await cli('openclaw-config', '--base-url', 'http://127.0.0.1:30000/v1', '--model-id', 'stories', '--with-plugin', '--context-window', '512', '--max-tokens', '64');
  assert.equal(r.code, 0, r.stderr);
  const cfg = JSON.parse(r.stdout);
  const provider = cfg.models.providers['openclaw-rl'];
  assert.equal(provider.baseUrl, 'http://127.0.0.1:30000/v1');
  assert.equal(provider.api, 'openai-completions');
  assert.deepEqual([provider.models[0].id, provider.models[0].contextWindow, provider.models[0].maxTokens], ['stories', 512, 64]);
  assert.deepEqual(provider.models[0].compat, { sendSessionAffinityHeaders: true, supportsPromptCacheKey: true });
  assert.equal(cfg.agents.defaults.model.primary, 'openclaw-rl/stories');
  assert.match(cfg.plugins.load.paths[0], /plugins\/openclaw\/$/);
  assert.deepEqual(cfg.plugins.allow, ['openclaw-rl']);
  assert.match(r.stderr, /openclaw plugins install --link .*plugins\/openclaw\/ --force --accept-capabilities/);
});
