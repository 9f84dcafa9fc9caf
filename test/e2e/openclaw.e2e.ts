// End to end with the real OpenClaw client (npm `openclaw@2026.9.6`, Node 24): our plugin, our
// server with the stories260K engine and learning on, and several multi-turn sessions through
// `openclaw agent --local`. OpenClaw is installed once into a cache folder; the server and the client
// run in a private network namespace (`unshare -n`) when the machine allows it, so only loopback
// exists. The test is skipped, with a message, only when OpenClaw cannot be installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/store.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const VERSION = '2026.9.6';
const CACHE = process.env.OPENCLAW_E2E_CACHE ?? join(homedir(), '.cache', 'openclaw-rl-e2e', `openclaw-${VERSION}`);
const OPENCLAW = join(CACHE, 'node_modules', '.bin', 'openclaw');

function installOpenClaw(): string | null {
  if (existsSync(OPENCLAW)) return null;
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(join(CACHE, 'package.json'), '{"name":"openclaw-e2e","version":"1.0.0","private":true}');
  try {
    execFileSync('npm', ['install', '--no-audit', '--no-fund', `openclaw@${VERSION}`], { cwd: CACHE, stdio: 'pipe', timeout: 15 * 60_000 });
    return existsSync(OPENCLAW) ? null : 'npm installed openclaw but its CLI is missing';
  } catch (e) {
    return `npm install openclaw@${VERSION} failed: ${(e as Error).message.split('\n')[0]}`;
  }
}

function canIsolate(): boolean {
  try { execFileSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' }); return true; } catch { return false; }
}

test('OpenClaw 2026.9 end to end: streamed answers, sessions, main/side, next states, judgements, training, new versions served', { timeout: 30 * 60_000 }, async (t) => {
  const failure = installOpenClaw();
  if (failure) { t.skip(`OpenClaw could not be installed (${failure}); this test needs the npm registry once`); return; }
  const work = tempDir('ocrl-e2e-');
  const out = join(work.dir, 'result.json');
  const scenario = fileURLToPath(new URL('./scenario.ts', import.meta.url));
  const args = [scenario, out, OPENCLAW, work.dir, STORIES];
  const isolated = canIsolate();
  t.diagnostic(isolated ? 'running in a private network namespace (unshare -n)' : 'unshare -n is not available: running on the host loopback');
  try {
    const started = performance.now();
    if (isolated) await promisify(execFile)('unshare', ['-n', 'sh', '-c', `ip link set lo up && exec "${process.execPath}" ${args.map((a) => `"${a}"`).join(' ')}`], { timeout: 25 * 60_000, maxBuffer: 64 * 2 ** 20 });
    else await promisify(execFile)(process.execPath, args, { timeout: 25 * 60_000, maxBuffer: 64 * 2 ** 20 });
    const result = JSON.parse(readFileSync(out, 'utf8')) as { turns: { session: string; plugin: boolean; ok: boolean; final: string; error?: string; seconds: number }[]; status: any; statusText: string; serverLog: string };
    console.log(`# OpenClaw end to end: ${result.turns.length} turns in ${((performance.now() - started) / 1000).toFixed(0)} s (${result.turns.map((x) => x.seconds.toFixed(0)).join(', ')} s each)`);
    for (const x of result.turns) assert.ok(x.ok && x.final.length > 0, `turn in ${x.session} failed: ${x.error ?? x.final}\n${result.serverLog.slice(-3000)}`);
    // `openclaw-rl status` shows the plugin at work: sessions identified by the header
    assert.match(result.statusText, /sessions by how they were identified: \{[^}]*"header":[1-9]/);
    // and the training pace, on by default
    assert.match(result.statusText, /training pace: turns wait while more than 0 full batch\(es\) wait for the trainer \(the one in training included\); \d+ turn\(s\) waiting now; \d+ waited so far/);

    const store = new Store(join(work.dir, 'data'));
    try {
      const main = (session: string) => store.turns(session).filter((x) => x.turn_type === 'main');
      // plugin on: sessions from the X-Session-Id header, three main turns each, answers streamed
      for (const session of ['conv-a', 'conv-b']) {
        const turns = main(session);
        assert.ok(turns.length >= 3, `${session}: ${turns.length} main turns`);
        assert.ok(turns.every((x) => x.type_source === 'header' && x.status === 'complete'), `${session}: ${turns.map((x) => x.type_source + '/' + x.status)}`);
        assert.ok(JSON.parse(turns[0].request_json).params, 'the request was recorded');
        // each turn's next state is the user's real next message, not OpenClaw's internal-context block
        const next = JSON.parse(turns[0].next_state_json ?? 'null');
        assert.equal(turns[0].next_state_status, 'paired', `${session}: ${turns[0].next_state_reason}`);
        assert.match(next.messages[0].content, /No, I wanted a story about a dog\.$/);
        assert.doesNotMatch(JSON.stringify(next), /BEGIN_OPENCLAW_INTERNAL_CONTEXT/);
        assert.match(JSON.parse(turns[1].next_state_json ?? 'null').messages[0].content, /Thanks, I love it!$/);
      }
      assert.equal(store.sessions().find((x) => x.id === 'conv-a')!.id_source, 'header');
      // plugin off: the session comes from OpenClaw's affinity headers, the turn type from the default
      const plain = main('conv-c');
      assert.ok(plain.length >= 2);
      assert.ok(['affinity', 'prompt_cache_key', 'runtime_footer'].includes(store.sessions().find((x) => x.id === 'conv-c')!.id_source));
      assert.equal(plain[0].next_state_status, 'paired', plain[0].next_state_reason ?? '');
      // judged and trained, and OpenClaw was then served by a newer version
      const judged = store.db.prepare(`SELECT COUNT(*) AS n FROM judgements WHERE status = 'done'`).get() as { n: number };
      assert.ok(Number(judged.n) >= 4, `${judged.n} judgements`);
      const steps = store.db.prepare(`SELECT COUNT(*) AS n FROM training_steps WHERE status = 'published'`).get() as { n: number };
      assert.ok(Number(steps.n) >= 1, `${steps.n} training steps`);
      const last = main('conv-d')[0];
      assert.ok(last.policy_version >= 1, `the last turn was served by version ${last.policy_version}`);
      assert.equal(main('conv-a')[0].policy_version, 0);
    } finally {
      store.close();
    }
  } finally {
    work.cleanup();
  }
});
