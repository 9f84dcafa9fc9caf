// `openclaw-rl sft` and `openclaw-rl merge` as a user runs them: a chat file in, a PEFT adapter (or
// a merged Hugging Face folder) out, which `generate` and the server load; malformed data refused by line.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { Store } from '../../src/store/store.ts';
import { startServer } from '../../src/api/server.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const tmp = tempDir();
after(tmp.cleanup);

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: { ...process.env, OPENCLAW_RL_MODEL: '' } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

function writeChatFile(file: string): void {
  const lines: string[] = [];
  for (const n of ['Tom', 'Lily', 'Ben', 'Sue', 'Max', 'Anna']) for (const a of ['dog', 'cat', 'bird', 'fish']) {
    lines.push(JSON.stringify({ messages: [
      { role: 'user', content: `Tell me about a ${a} named ${n}.` },
      { role: 'assistant', content: `${n} was a happy ${a}. ${n} liked to play in the park.` },
    ] }));
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

const data = join(tmp.dir, 'chat.jsonl');
writeChatFile(data);
const adapter = join(tmp.dir, 'adapter');
const merged = join(tmp.dir, 'merged');

test('sft --lora-rank: trains, prints progress and a summary with the eval loss, writes a PEFT adapter folder', async () => {
  const r = await cli('sft', '--model', STORIES, '--data', data, '--out', adapter, '--lora-rank', '8', '--epochs', '2', '--batch-tokens', '256', '--eval-fraction', '0.2', '--threads', '1');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /24 examples \(\d+ assistant tokens\)/);
  assert.match(r.stderr, /tok\/s/);
  const summary = /eval loss (\d+\.\d+) → (\d+\.\d+) on 5 held-out examples/.exec(r.stderr);
  assert.ok(summary, r.stderr);
  assert.ok(Number(summary[2]) < Number(summary[1]), summary[0]);
  assert.deepEqual(readdirSync(adapter).sort(), ['adapter_config.json', 'adapter_model.safetensors']);
  assert.equal(JSON.parse(readFileSync(join(adapter, 'adapter_config.json'), 'utf8')).r, 8);
  assert.equal(existsSync(`${adapter}.checkpoint`), false, 'the checkpoint folder is removed after a finished run');
});

test('merge: the merged folder is a complete Hugging Face folder whose scores equal base + adapter within 1e-4', async () => {
  const r = await cli('merge', '--model', STORIES, '--adapter', adapter, '--out', merged);
  assert.equal(r.code, 0, r.stderr);
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'special_tokens_map.json']) assert.ok(existsSync(join(merged, f)), f);
  const base = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const full = await EmbeddedEngine.load(merged, { threads: 1 });
  try {
    const v = await base.loadAdapter(adapter);
    const requests = [
      { promptIds: base.tokenizer.encode('Tell me about a dog named Tom.'), responseIds: base.tokenizer.encode('\nTom was a happy dog.', false) },
      { promptIds: [1], responseIds: base.tokenizer.encode('Once upon a time, there was a little girl named Lily.', false) },
    ];
    const withAdapter = await base.score(requests, { adapter: v });
    const withBase = await base.score(requests, { adapter: 'base' });
    const mergedScores = await full.score(requests);
    let maxDiff = 0, adapterEffect = 0;
    withAdapter.forEach((lp, k) => lp.forEach((x, t) => {
      maxDiff = Math.max(maxDiff, Math.abs(x - mergedScores[k][t]));
      adapterEffect = Math.max(adapterEffect, Math.abs(x - withBase[k][t]));
    }));
    assert.ok(maxDiff < 1e-4, `max |merged − base+adapter| = ${maxDiff}`);
    assert.ok(adapterEffect > 0.1, `the adapter changes the scores (${adapterEffect}), so the comparison means something`);
  } finally {
    await base.close(); await full.close();
  }
});

test('the merged folder loads in generate and in the server', async () => {
  const g = await cli('generate', '--model', merged, '--messages', '[{"role":"user","content":"Tell me about a cat named Lily."}]', '--temperature', '0', '--max-tokens', '12');
  assert.equal(g.code, 0, g.stderr);
  assert.match(g.stdout, /Lily/);
  const engine = await EmbeddedEngine.load(merged, { threads: 1 });
  const t = tempDir('ocrl-sft-server-');
  const store = new Store(t.dir);
  const server = await startServer({ engine, store, modelId: 'merged', port: 0 });
  try {
    const res = await post(`${server.url}/v1/chat/completions`, { model: 'merged', messages: [{ role: 'user', content: 'Tell me about a dog named Ben.' }], max_tokens: 8, temperature: 0 });
    assert.equal(res.status, 200, res.text);
    assert.equal(typeof res.json.choices[0].message.content, 'string');
  } finally {
    await server.close(); await engine.close(); store.close(); t.cleanup();
  }
});

test('sft --full: every weight trained, a complete Hugging Face folder written that generate and the server load', async () => {
  const out = join(tmp.dir, 'full-model');
  const r = await cli('sft', '--model', STORIES, '--data', data, '--out', out, '--full', '--epochs', '2', '--batch-tokens', '256', '--eval-fraction', '0.2', '--learning-rate', '2e-3', '--threads', '1');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /training every weight \(full-parameter\)/);
  const summary = /eval loss (\d+\.\d+) → (\d+\.\d+) on 5 held-out examples/.exec(r.stderr);
  assert.ok(summary, r.stderr);
  assert.ok(Number(summary[2]) < 0.5 * Number(summary[1]), summary[0]);
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'special_tokens_map.json']) assert.ok(existsSync(join(out, f)), f);
  const g = await cli('generate', '--model', out, '--messages', '[{"role":"user","content":"Tell me about a fish named Max."}]', '--temperature', '0', '--max-tokens', '12');
  assert.equal(g.code, 0, g.stderr);
  assert.match(g.stdout, /Max/);
  const engine = await EmbeddedEngine.load(out, { threads: 1 });
  const t = tempDir('ocrl-sft-full-server-');
  const store = new Store(t.dir);
  const server = await startServer({ engine, store, modelId: 'full', port: 0 });
  try {
    const res = await post(`${server.url}/v1/chat/completions`, { model: 'full', messages: [{ role: 'user', content: 'Tell me about a bird named Sue.' }], max_tokens: 8, temperature: 0 });
    assert.equal(res.status, 200, res.text);
  } finally {
    await server.close(); await engine.close(); store.close(); t.cleanup();
  }
  const both = await cli('sft', '--model', STORIES, '--data', data, '--out', out, '--full', '--lora-rank', '4');
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--full trains every weight/);
});

test('sft refuses a malformed record naming the file and line, before loading the model', async () => {
  const bad = join(tmp.dir, 'bad.jsonl');
  writeFileSync(bad, `${readFileSync(data, 'utf8').split('\n')[0]}\n\n{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": "x"}]}\n`);
  const r = await cli('sft', '--model', STORIES, '--data', bad, '--out', join(tmp.dir, 'never'));
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`${bad}:3: messages\\[1\\]\\.tool_calls must be an array`));
  assert.equal(existsSync(join(tmp.dir, 'never')), false);
  const missing = await cli('sft', '--model', STORIES, '--out', join(tmp.dir, 'never'));
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--data FILE\.jsonl is required/);
});
