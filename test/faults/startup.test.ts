// No zombie states: the real CLI either serves with every configured loop running, or exits
// non-zero with a clear message within 5 seconds. /readyz says 200 only when the loops run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORIES, tempDir } from '../helpers/models.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const tmp = tempDir('ocrl-startup-');
after(tmp.cleanup);

/** Run `openclaw-rl serve ARGS` until it exits (or 5 s pass: then it is killed and reported as hung). */
function serveExpectingExit(args: string[]): Promise<{ code: number | null; stderr: string; ms: number }> {
  const t0 = performance.now();
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); }, 5000);
    proc.on('exit', (code) => { clearTimeout(timer); resolve({ code, stderr, ms: performance.now() - t0 }); });
  });
}

const cases: [string, string[], RegExp][] = [
  ['a data folder that cannot be created', ['--data-dir', join(tmp.dir, 'a-file', 'data')], /cannot use the data folder .*(ENOTDIR|EEXIST|ENOENT)/],
  ['a learning rate of 1e30', ['--data-dir', join(tmp.dir, 'd1'), '--learning-rate', '1e30'], /--learning-rate: the learning rate 1e\+30 is above 0\.1/],
  ['an unknown --method', ['--data-dir', join(tmp.dir, 'd2'), '--method', 'foo'], /--method must be one of binary, opd, combine/],
  ['an unknown --reward-baseline', ['--data-dir', join(tmp.dir, 'd3'), '--reward-baseline', 'mean'], /--reward-baseline must be/],
  ['a malformed --overlong', ['--data-dir', join(tmp.dir, 'd4'), '--overlong', '5'], /--overlong expects/],
  ['--lora-rank 0', ['--data-dir', join(tmp.dir, 'd5'), '--lora-rank', '0'], /--lora-rank/],
];
writeFileSync(join(tmp.dir, 'a-file'), 'not a folder');

for (const [what, args, message] of cases) {
  test(`startup with ${what} exits non-zero with a clear message within 5 s`, { timeout: 30_000 }, async () => {
    const r = await serveExpectingExit(args);
    assert.notEqual(r.code, null, `still running after 5 s (killed):\n${r.stderr}`);
    assert.notEqual(r.code, 0, r.stderr);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.ok(r.ms < 5000, `${r.ms} ms`);
  });
}
