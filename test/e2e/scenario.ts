// Runs inside a private network namespace when available (see openclaw.e2e.ts): starts the server
// with the stories260K engine and learning on, then drives the real OpenClaw CLI
// (`openclaw agent --local`) through several sessions, with and without our plugin.
// Writes what happened to the JSON file named by argv[2].
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openclawConfig } from '../../src/cli/openclaw-config.ts';
import { stopProcess } from '../helpers/processes.ts';

const [, , outFile, openclawBin, workDir, storiesDir] = process.argv;
const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const run = promisify(execFile);
const PORT = 30000 + Math.floor(Math.random() * 1000);

const server = spawn(process.execPath, [BIN, 'serve', '--model', storiesDir, '--port', String(PORT), '--data-dir', join(workDir, 'data'),
  '--served-model-name', 'stories', '--context-overflow', 'truncate', '--method', 'binary', '--batch-size', '2', '--learning-rate', '0.01',
  '--judge', 'lexical', '--default-max-tokens', '48'], { stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
server.stderr!.on('data', (d) => { serverLog += d; });
const url = `http://127.0.0.1:${PORT}`;
for (let i = 0; i < 200 && !/serving/.test(serverLog); i++) await new Promise((r) => setTimeout(r, 100));

function stateDir(name: string, withPlugin: boolean): Record<string, string> {
  const dir = join(workDir, name);
  mkdirSync(join(dir, 'home'), { recursive: true });
  const cfg = openclawConfig({ baseUrl: `${url}/v1`, modelId: 'stories', apiKey: 'rl-local', contextWindow: 32768, maxTokens: 48, withPlugin });
  Object.assign(cfg, {
    update: { checkOnStart: false },
    agents: { defaults: { ...(cfg.agents as { defaults: object }).defaults, heartbeat: { every: '0m' } } },
    plugins: { ...(cfg.plugins as object | undefined), entries: { ...((cfg.plugins as { entries?: object } | undefined)?.entries ?? {}), 'memory-core': { config: { dreaming: { enabled: false } } } } },
  });
  writeFileSync(join(dir, 'openclaw.json'), JSON.stringify(cfg, null, 2));
  return {
    ...process.env as Record<string, string>, HOME: join(dir, 'home'), OPENCLAW_STATE_DIR: dir, OPENCLAW_NO_AUTO_UPDATE: '1', DO_NOT_TRACK: '1',
    CLAWHUB_DISABLE_TELEMETRY: '1', OPENCLAW_SKIP_CHANNELS: '1', OPENCLAW_SKIP_CRON: '1', OPENCLAW_RL_URL: `${url}/v1`,
  };
}

const turns: { session: string; plugin: boolean; message: string; ok: boolean; final: string; error?: string; seconds: number }[] = [];
async function turn(env: Record<string, string>, session: string, plugin: boolean, message: string): Promise<void> {
  const t0 = performance.now();
  try {
    const { stdout } = await run(openclawBin, ['agent', '--local', '--session-id', session, '--message', message, '--json', '--timeout', '120'], { env, cwd: env.OPENCLAW_STATE_DIR, timeout: 180_000, maxBuffer: 64 * 2 ** 20 });
    const out = JSON.parse(stdout.slice(stdout.indexOf('{')));
    const final = typeof out.final === 'string' ? out.final : JSON.stringify(out.payloads ?? out.final ?? '');
    turns.push({ session, plugin, message, ok: out.ok !== false && out.status !== 'error', final, seconds: (performance.now() - t0) / 1000 });
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    turns.push({ session, plugin, message, ok: false, final: '', error: `${err.message}\n${(err.stderr ?? '').slice(-2000)}`, seconds: (performance.now() - t0) / 1000 });
  }
}

const withPlugin = stateDir('oc-plugin', true);
const withoutPlugin = stateDir('oc-plain', false);
const script = ['Tell me a story about a cat.', 'No, I wanted a story about a dog.', 'Thanks, I love it!'];
for (const session of ['conv-a', 'conv-b']) for (const m of script) await turn(withPlugin, session, true, m);
for (const m of script.slice(0, 2)) await turn(withoutPlugin, 'conv-c', false, m);
// let the judge and the learning loop catch up, then one more turn is served by a trained version
let status: Record<string, unknown> = {};
for (let i = 0; i < 100; i++) {
  status = await (await fetch(`${url}/admin/status`)).json() as Record<string, unknown>;
  if ((status.trainer as { step: number } | null)?.step) break;
  await new Promise((r) => setTimeout(r, 200));
}
await turn(withPlugin, 'conv-d', true, 'Tell me a story.');
const { stdout: statusText } = await run(process.execPath, [BIN, 'status', '--url', url]);
await stopProcess(server, 'SIGTERM');
writeFileSync(outFile, JSON.stringify({ turns, status, statusText, serverLog }, null, 2));
