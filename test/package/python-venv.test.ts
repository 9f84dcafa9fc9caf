// scripts/python-venv.sh: a cached Python environment from local wheel folders only, with a distinct
// "unavailable" status (3) and a reason where the folders or a wheel are missing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/models.ts';

const SCRIPT = fileURLToPath(new URL('../../scripts/python-venv.sh', import.meta.url));
const tmp = tempDir();
after(tmp.cleanup);

function run(args: string[], env: Record<string, string>) {
  const r = spawnSync('bash', [SCRIPT, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout.trim(), stderr: r.stderr };
}

const hasVenv = spawnSync('python3', ['-c', 'import venv, ensurepip']).status === 0;
const LOCAL_WHEEL = '/opt/pypi/files/packaging-26.3-py3-none-any.whl';

test('python-venv: a requirements file that does not exist is a usage error', () => {
  const r = run([join(tmp.dir, 'missing.txt')], { OPENCLAW_RL_CACHE: join(tmp.dir, 'cache-usage') });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /usage: scripts\/python-venv\.sh/);
});

test('python-venv: no wheel folder → status 3 and the reason, nothing cached', () => {
  const cache = join(tmp.dir, 'cache-nofolder');
  const r = run([], { OPENCLAW_RL_CACHE: cache, OPENCLAW_RL_WHEEL_DIRS: `${join(tmp.dir, 'no-such-folder')}:/nonexistent-wheels` });
  assert.equal(r.status, 3);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, hasVenv ? /unavailable: none of the wheel folders exists: .*no-such-folder/ : /unavailable: /);
  assert.ok(!existsSync(join(cache, 'python')) || readdirSync(join(cache, 'python')).length === 0);
});

test('python-venv: a wheel missing from the folders → status 3 naming it, no half-built environment left', { skip: !hasVenv && 'python3 has no venv module here' }, () => {
  const cache = join(tmp.dir, 'cache-nowheel'), wheels = join(tmp.dir, 'empty-wheels');
  mkdirSync(wheels);
  const req = join(tmp.dir, 'absent-requirements.txt');
  writeFileSync(req, 'openclaw-rl-no-such-package==1.0\n');
  const r = run([req], { OPENCLAW_RL_CACHE: cache, OPENCLAW_RL_WHEEL_DIRS: wheels });
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /unavailable: no wheel in .*empty-wheels for: openclaw-rl-no-such-package==1\.0/);
  assert.deepEqual(readdirSync(join(cache, 'python')), []);
});

test('python-venv: builds from a local wheel, reuses the environment, removes older ones of the same file',
  { skip: (!hasVenv && 'python3 has no venv module here') || (!existsSync(LOCAL_WHEEL) && `${LOCAL_WHEEL} is not on this machine`) }, () => {
    const cache = join(tmp.dir, 'cache-build');
    const req = join(tmp.dir, 'tiny-requirements.txt');
    writeFileSync(req, '# a pure-Python wheel\npackaging==26.3\n');
    const stale = join(cache, 'python', 'tiny-0000000000000000');
    mkdirSync(stale, { recursive: true });
    const env = { OPENCLAW_RL_CACHE: cache, OPENCLAW_RL_WHEEL_DIRS: '/opt/pypi/files' };
    const first = run([req], env);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /\/python\/tiny-[0-9a-f]{16}\/bin\/python$/);
    assert.match(first.stderr, /building .* \(no network\)/);
    const version = spawnSync(first.stdout, ['-c', 'import packaging; print(packaging.__version__)'], { encoding: 'utf8' });
    assert.equal(version.stdout.trim(), '26.3');
    assert.ok(!existsSync(stale), 'the older environment is removed');
    const second = run([req], env);
    assert.equal(second.status, 0);
    assert.equal(second.stdout, first.stdout);
    assert.equal(second.stderr, '', 'the cached environment is reused without building');
  });
