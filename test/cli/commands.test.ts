// Every openclaw-rl command as a user meets it: --help, bad values refused before anything loads, unknown
// commands and flags with suggestions, --version, and output into a pipe that closes early.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { COMMANDS } from '../../src/cli/main.ts';
import { Store } from '../../src/store/store.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const NO_MODEL = '/nonexistent/openclaw-rl-test-model';

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...process.env, OPENCLAW_RL_MODEL: '', ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** Runs `f` over `items`, a few at a time (each is a Node process). */
async function inBatches<T, R>(items: T[], f: (x: T) => Promise<R>, size = 4): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...await Promise.all(items.slice(i, i + size).map(f)));
  return out;
}

test('every command has --help and -h: usage, each declared option, exit codes; exit 0 on stdout', async () => {
  await inBatches([...COMMANDS], async (c) => {
    const words = c.name.split(' ');
    const [long, short] = await Promise.all([cli([...words, '--help']), cli([...words, '-h'])]);
    assert.equal(long.code, 0, `${c.name} --help: ${long.stderr}`);
    assert.equal(short.stdout, long.stdout);
    assert.match(long.stdout, new RegExp(`^Usage: openclaw-rl ${c.name} \\[options\\]`));
    assert.match(long.stdout, /Exit codes: 0 success, 1 runtime failure, 2 usage error/);
    const declared = Object.entries((c as unknown as { spec: { options: Record<string, { hidden?: boolean }> } }).spec.options).filter(([, o]) => !o.hidden);
    for (const [name] of declared) assert.match(long.stdout, new RegExp(`--${name}\\b`), `${c.name} --help lacks --${name}`);
  });
});

test('openclaw-rl --help lists every command; --version prints the package version; no command prints help and exits 2', async () => {
  const help = await cli(['--help']);
  assert.equal(help.code, 0);
  for (const c of COMMANDS) assert.match(help.stdout, new RegExp(`^  ${c.name}\\s`, 'm'), c.name);
  const version = await cli(['--version']);
  assert.equal(version.stdout.trim(), JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  const none = await cli([]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /Usage: openclaw-rl <command>/);
  const group = await cli(['bench', '--help']);
  assert.equal(group.code, 0);
  assert.match(group.stdout, /bench engine/);
});

test('unknown commands, subcommands and flags exit 2 with a suggestion', async () => {
  const table: [string[], RegExp][] = [
    [['serv'], /unknown command 'serv' \(did you mean serve\?\)/],
    [['exprot'], /unknown command 'exprot' \(did you mean export\?\)/],
    [['bench', 'engien'], /unknown bench 'engien' \(did you mean engine\?\)/],
    [['serve', '--prot', '1'], /unknown option '--prot' \(did you mean --port\?\)/],
    [['generate', '--max-token', '3'], /unknown option '--max-token' \(did you mean --max-tokens\?\)/],
    [['export', '--data-dri', 'x'], /did you mean --data-dir\?/],
    [['openclaw-config', '--with-plugins'], /did you mean --with-plugin\?/],
  ];
  await inBatches(table, async ([args, re]) => {
    const r = await cli(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, re);
  });
  // a flag no command knows, for every command (new commands included)
  await inBatches([...COMMANDS], async (c) => {
    const r = await cli([...c.name.split(' '), '--no-such-flag']);
    assert.equal(r.code, 2, c.name);
    assert.match(r.stderr, /unknown option '--no-such-flag'/);
  });
});

test('bad values exit 2 with a clear message before any model is resolved or loaded', async () => {
  // the model path does not exist: had the command got as far as resolving it, the message would say so instead
  const t = tempDir();
  const m = ['--model', NO_MODEL];
  const table: [string[], RegExp, Record<string, string>?][] = [
    [['serve', ...m, '--port', '99999'], /--port expects a port number from 1 to 65535 \(or 0 for any free port\), got '99999'/],
    [['serve', ...m], /PORT \(environment\) expects a port number/, { PORT: 'eighty' }],
    [['serve', ...m, '--judge', 'lexcal'], /--judge must be one of none, lexical, self, llm; got 'lexcal' \(did you mean lexical\?\)/],
    [['serve', ...m, '--max-concurrent', '0'], /--max-concurrent expects an integer ≥ 1, got '0'/],
    [['serve', ...m, '--learning-rate', '-1'], /--learning-rate expects a number > 0, got '-1'/],
    [['serve', ...m, '--method', 'ppo'], /--method must be one of binary, opd, combine/],
    [['serve', ...m, '--overlong', '10,20'], /--overlong expects L_MAX,L_CACHE/],
    [['serve', ...m, '--judge', 'llm'], /--judge llm needs --judge-url/],
    [['serve', ...m, '--config', join(t.dir, 'missing.json')], /config file not found/],
    [['serve', ...m, '--cors-origin', 'app.example.com'], /--cors-origin: 'app\.example\.com' is not an origin/],
    [['demo', ...m, '--conversations', '0'], /--conversations expects an integer ≥ 1, got '0'/],
    [['demo', ...m, '--persona', 'dog-lovr'], /no shipped persona 'dog-lovr' \(did you mean dog-lover\?\)/],
    [['demo', ...m, '--persona-file', join(t.dir, 'nope.json')], /--persona-file: no file at/],
    [['status', '--url', ''], /--url must not be empty/],
    [['openclaw-config', '--context-window', '0'], /--context-window expects an integer ≥ 1, got '0'/],
    [['openclaw-config', '--max-tokens', 'many'], /--max-tokens expects an integer ≥ 1, got 'many'/],
    [['export', '--from', 'yesterday'], /--from expects a date or time/],
    [['generate', ...m, '--prompt', 'x', '--top-p', '1.5'], /--top-p expects a number > 0 and ≤ 1, got '1.5'/],
    [['generate', ...m, '--messages', '{'], /--messages is not valid JSON/],
    [['generate', ...m, '--prompt', 'x', '--seed', '1.5'], /--seed expects an integer, got '1.5'/],
    [['generate', ...m, '--prompt', 'x', '--adapter', join(t.dir, 'none')], /--adapter: no folder at/],
    [['generate', ...m], /give exactly one of --prompt TEXT/],
    [['score', ...m, '--prompt-ids', '1,x', '--response-ids', '2'], /--prompt-ids expects comma-separated token ids, got '1,x'/],
    [['bench', 'engine', '--shape', '7b'], /--shape must be one of 260k, 15m, 135m, 0\.6b, 1\.7b, 4b; got '7b'/],
    [['bench', 'engine', '--model', STORIES, '--shape', '15m'], /give --model DIR or --shape 260k\|15m\|135m\|0\.6b\|1\.7b\|4b, not both/],
    [['bench', 'engine', '--on-disk'], /--on-disk writes a --shape to disk: give --shape too/],
    [['bench', 'train', '--shape', '15m', '--rank', '0'], /--rank expects an integer ≥ 1, got '0'/],
    [['bench', 'gateway', ...m, '--concurrency', 'lots'], /--concurrency expects an integer ≥ 1, got 'lots'/],
    [['bench', 'personalize', ...m, '--method', 'ppo'], /--method must be one of binary, opd, combine; got 'ppo'/],
  ];
  try {
    await inBatches(table, async ([args, re, env]) => {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re, args.join(' '));
      assert.doesNotMatch(r.stderr, /loading|nonexistent|    at /, args.join(' '));
    });
  } finally {
    t.cleanup();
  }
});

test('export | head -1: the first record, then a quiet exit 0 when the reader closes the pipe', async () => {
  const t = tempDir();
  try {
    const store = new Store(t.dir);
    const filler = 'x'.repeat(300);
    for (let i = 0; i < 2000; i++) {
      const id = store.beginTurn({ sessionId: `s${i % 5}`, idSource: 'header', turnType: 'main', typeSource: 'header', request: { messages: [{ role: 'user', content: `turn ${i} ${filler}` }] }, promptIds: [1, 2, 3], policyVersion: 0 });
      store.finishTurn(id, { status: 'complete', responseIds: [4, 5], responseLogprobs: [-0.1, -0.2], responseText: 'hi', answer: { content: 'hi', reasoning: null, toolCalls: [] }, finishReason: 'stop', policyVersion: 0 });
    }
    store.close();
    // far more than a pipe buffer (64 KiB) is written, so the writer meets the closed pipe
    const script = `set -o pipefail; "${process.execPath}" "${BIN}" export --data-dir "${t.dir}" 2>"${join(t.dir, 'stderr')}" | head -1`;
    const { stdout } = await promisify(execFile)('bash', ['-c', script]);
    assert.equal(stdout.split('\n').length, 2);
    assert.equal(JSON.parse(stdout).sessionId, 's0');
    assert.equal(readFileSync(join(t.dir, 'stderr'), 'utf8'), '');
  } finally {
    t.cleanup();
  }
});
