// `openclaw-rl openclaw-config`: the model id, context window and answer length come from the served model —
// the running server first, else the model folder serve is given — and match what `serve` answers to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { defaultModelId } from '../../src/cli/args.ts';
import { defaultMaxTokens } from '../../src/cli/openclaw-config.ts';
import { startTestServer } from '../helpers/server.ts';
import { STORIES } from '../helpers/models.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const CLOSED = 'http://127.0.0.1:9/v1'; // the discard port: nothing listens there

async function config(args: string[], env: Record<string, string> = {}): Promise<{ code: number; cfg: any; stderr: string }> {
  const r = await promisify(execFile)(process.execPath, [BIN, 'openclaw-config', ...args], { env: { ...process.env, OPENCLAW_RL_MODEL: '', OPENCLAW_RL_API_KEY: '', ...env } })
    .then((x) => ({ ...x, code: 0 }), (e) => e);
  return { code: r.code, cfg: r.code === 0 ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}
const model = (cfg: any) => cfg.models.providers['openclaw-rl'].models[0];

test('the default model id is the folder name or the Hugging Face id; maxTokens leaves room for the prompt', () => {
  assert.equal(defaultModelId(STORIES), 'stories260k-hf');
  assert.equal(defaultModelId(`${STORIES}/`), 'stories260k-hf');
  assert.equal(defaultModelId('HuggingFaceTB/SmolLM2-135M-Instruct'), 'HuggingFaceTB/SmolLM2-135M-Instruct');
  const table: [number, number][] = [[512, 128], [2048, 512], [32768, 2048], [131072, 2048], [2, 1]];
  for (const [ctx, max] of table) assert.equal(defaultMaxTokens(ctx), max, String(ctx));
});

test('with a server running: its model id and context window (GET /v1/models), and the plugin entry names the server', async () => {
  const s = await startTestServer({ apiKey: 'k1' });
  try {
    const r = await config(['--base-url', `${s.url}/v1`, '--with-plugin'], { OPENCLAW_RL_API_KEY: 'k1' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual([model(r.cfg).id, model(r.cfg).contextWindow, model(r.cfg).maxTokens], ['stories', s.engine.info.contextLength, defaultMaxTokens(s.engine.info.contextLength)]);
    assert.equal(r.cfg.agents.defaults.model.primary, 'openclaw-rl/stories');
    assert.deepEqual(r.cfg.plugins.entries['openclaw-rl'].config, { serverUrl: `${s.url}/v1`, apiKey: 'k1' });
    assert.match(r.stderr, /Model 'stories' \(from the server at /);
    const mismatch = await config(['--base-url', `${s.url}/v1`, '--model-id', 'policy'], { OPENCLAW_RL_API_KEY: 'k1' });
    assert.match(mismatch.stderr, /serves 'stories', not 'policy': requests will get 404/);
  } finally {
    await s.close();
  }
});

test('without a server: the id serve would use for --model (or OPENCLAW_RL_MODEL) and the context its config.json declares', async () => {
  for (const [args, env] of [[['--model', STORIES], {}], [[], { OPENCLAW_RL_MODEL: STORIES }]] as [string[], Record<string, string>][]) {
    const r = await config(['--base-url', CLOSED, ...args], env);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual([model(r.cfg).id, model(r.cfg).contextWindow, model(r.cfg).maxTokens], ['stories260k-hf', 512, 128]);
  }
  const flags = await config(['--base-url', CLOSED, '--model', STORIES, '--model-id', 'x', '--context-window', '1024', '--max-tokens', '64']);
  assert.deepEqual([model(flags.cfg).id, model(flags.cfg).contextWindow, model(flags.cfg).maxTokens], ['x', 1024, 64]);
  const guess = await config(['--base-url', CLOSED, '--model-id', 'x']);
  assert.equal(model(guess.cfg).contextWindow, 32768);
  assert.match(guess.stderr, /Warning: the context window is unknown .* assumed 32768; pass --context-window N/);
  const none = await config(['--base-url', CLOSED]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /cannot tell the served model's id: no server answered at http:\/\/127\.0\.0\.1:9\/v1\/models .*pass --model DIR\|ID .* or --model-id ID/);
});
