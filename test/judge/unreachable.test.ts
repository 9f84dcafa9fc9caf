// An LLM judge that nobody answers (a closed port): serve warns within 10 s of starting, and the failure
// shows in GET /admin/status, `openclaw-rl status` and /metrics; --log-format json makes every log line JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { STORIES, tempDir } from '../helpers/models.ts';
import { stopProcess } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));

async function serveWithDeadJudge(extra: string[]) {
  const t = tempDir();
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', t.dir, '--no-train',
    '--judge', 'llm', '--judge-url', 'http://127.0.0.1:9/v1', '--judge-model', 'judge', ...extra], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, OPENCLAW_RL_API_KEY: '' } });
  let log = '';
  proc.stderr!.on('data', (d) => { log += d; });
  const waitFor = (re: RegExp, ms: number) => new Promise<RegExpExecArray>((resolve, reject) => {
    const t0 = Date.now();
    const check = () => { const m = re.exec(log); if (m) resolve(m); else if (Date.now() - t0 > ms) reject(new Error(`no ${re} within ${ms} ms:\n${log}`)); else setTimeout(check, 50); };
    check();
  });
  const close = async () => { await stopProcess(proc, 'SIGTERM'); t.cleanup(); };
  return { waitFor, log: () => log, close };
}

test('text logs: a WARN line within 10 s, and the failure in status and metrics', async () => {
  const s = await serveWithDeadJudge([]);
  try {
    const [, url] = await s.waitFor(/at (http:\/\/\S+)\/v1/, 60_000);
    const t0 = Date.now();
    await s.waitFor(/WARN .*judge llm unreachable: .*127\.0\.0\.1:9.*turns are recorded, and judged once it answers/, 10_000);
    assert.ok(Date.now() - t0 < 10_000);
    const status = await (await fetch(`${url}/admin/status`)).json() as { judgeHealth: { failures: number; lastError: string } };
    assert.ok(status.judgeHealth.failures >= 1);
    assert.match(status.judgeHealth.lastError, /unreachable/);
    const text = (await promisify(execFile)(process.execPath, [BIN, 'status', '--url', url])).stdout;
    assert.match(text, /judge: llm \(\d+ failed call\(s\); last: unreachable: /);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.match(metrics, /# TYPE openclaw_rl_judge_failures_total counter\nopenclaw_rl_judge_failures_total [1-9]/);
  } finally {
    await s.close();
  }
});

test('--log-format json: every line is a JSON object; the judge warning has level 40', async () => {
  const s = await serveWithDeadJudge(['--log-format', 'json']);
  try {
    await s.waitFor(/"level":40.*unreachable/, 60_000);
    const lines = s.log().trim().split('\n');
    for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), l);
    const warn = lines.map((l) => JSON.parse(l)).find((r) => r.level === 40 && /unreachable/.test(r.msg));
    assert.equal(warn.component, 'judge');
  } finally {
    await s.close();
  }
});
