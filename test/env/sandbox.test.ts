// The sandbox under attack: each hostile command ends in a clean result within the limits, and the
// host is untouched. Skipped (with the reason) only where the kernel refuses bubblewrap's namespaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox, sandboxSupport, describeRun, sandboxTempRoot, passableByOthers } from '../../src/env/sandbox.ts';

const support = sandboxSupport();
const skip = support.ok ? false : support.reason;
const limits = { wallMs: 4000, cpuSeconds: 2, memoryBytes: 256 * 2 ** 20, processes: 32 };
const hasPython = (() => { try { execFileSync('python3', ['--version']); return true; } catch { return false; } })();

/** Processes of a sandbox's uid still alive on the host. */
function processesOf(uid: number | null): number {
  if (uid === null) return 0;
  const out = execFileSync('ps', ['-o', 'pid=', '-u', String(uid)], { encoding: 'utf8' }).trim();
  return out ? out.split('\n').length : 0;
}
function psCount(uid: number | null): number { try { return processesOf(uid); } catch { return 0; } }
/** Wait until no process of the uid is left (an orphaned namespace init is reaped by the host's init, soon). */
async function settled(uid: number | null, ms = 8000): Promise<number> {
  const end = Date.now() + ms;
  while (psCount(uid) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
  return psCount(uid);
}

test('sandboxes live where their uid can reach them: a private TMPDIR is passed over for /tmp when we are root, kept otherwise', () => {
  const priv = mkdtempSync(join(tmpdir(), 'private-')); // mktemp's mode 0700
  const open = mkdtempSync(join(tmpdir(), 'open-'));
  try {
    chmodSync(open, 0o755);
    const cases: [boolean, string, string][] = [
      [false, priv, priv], // not root: commands run as us, who can read our own private folder
      [true, open, passableByOthers(open) ? open : '/tmp'],
      [true, priv, '/tmp'],
    ];
    for (const [root, tmp, want] of cases) assert.equal(sandboxTempRoot(root, tmp), want, `root ${root}, ${tmp}`);
    assert.equal(passableByOthers(priv), false);
    assert.equal(passableByOthers('/'), true);
  } finally { rmSync(priv, { recursive: true }); rmSync(open, { recursive: true }); }
});

test('an infinite loop is killed at the CPU limit and reported as such', { skip }, async () => {
  const s = new Sandbox(limits);
  try {
    const r = await s.run('while :; do :; done');
    assert.notEqual(r.exitCode, 0);
    assert.ok(r.durationMs < limits.wallMs + 1000);
    assert.match(describeRun(r, s.limits), /killed: (CPU|wall-clock) limit/);
    assert.equal(await settled(s.uid), 0);
  } finally { s.destroy(); }
});

test('a command that sleeps past the wall-clock limit is killed with its whole process tree', { skip }, async () => {
  const s = new Sandbox(limits);
  try {
    const r = await s.run('sleep 1000 & sleep 1000 & sleep 1000');
    assert.equal(r.timedOut, true);
    assert.match(describeRun(r, s.limits), /wall-clock limit of 4 s/);
    assert.equal(await settled(s.uid), 0, 'no sandbox process survives');
  } finally { s.destroy(); }
});

test('a fork bomb stops at the process limit, ends within the wall clock, and leaves no process behind', { skip }, async () => {
  const s = new Sandbox(limits);
  try {
    const t0 = Date.now();
    const r = await s.exec(['/bin/bash', '-c', ':(){ :|:& };:; sleep 1; echo still-here']);
    assert.ok(Date.now() - t0 < limits.wallMs + 2000);
    assert.ok(r.stdout.includes('still-here') || r.timedOut, 'the bomb was contained');
    assert.equal(await settled(s.uid), 0, 'the pid namespace died with the command');
    // the host can still start processes
    assert.equal(execFileSync('echo', ['ok'], { encoding: 'utf8' }).trim(), 'ok');
  } finally { s.destroy(); }
});

test('a 10 GB allocation fails inside the sandbox with an out-of-memory error', { skip: skip || (!hasPython && 'python3 is not installed') }, async () => {
  const s = new Sandbox(limits);
  try {
    const r = await s.exec(['python3', '-c', 'a = bytearray(10 * 1024**3); print("allocated")']);
    assert.notEqual(r.exitCode, 0);
    assert.doesNotMatch(r.stdout, /allocated/);
    assert.match(r.stderr, /MemoryError/);
  } finally { s.destroy(); }
});

test('the sandbox sees only its working tree: host files and folders outside it are absent, and it cannot write outside', { skip }, async () => {
  const host = mkdtempSync(join(tmpdir(), 'openclaw-rl-host-'));
  writeFileSync(join(host, 'secret.txt'), 'host secret');
  const s = new Sandbox(limits);
  try {
    const r = await s.run(`cat ${host}/secret.txt; cat /etc/shadow; cat /etc/passwd; ls /root; cat ../secret.txt; ls /; echo x > /usr/evil`);
    assert.doesNotMatch(r.stdout, /host secret/);
    assert.match(r.stderr, /No such file|Read-only/);
    assert.deepEqual(r.stdout.trim().split('\n').sort(), ['bin', 'dev', 'etc', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr', 'work'].filter((d) => r.stdout.includes(d)).sort());
    assert.ok(!existsSync('/usr/evil'));
    // a symlink planted in the tree does not redirect write_file outside it
    await s.run(`ln -s ${host}/secret.txt link.txt`);
    await s.writeFile('link.txt', 'overwritten');
    assert.equal(readFileSync(join(host, 'secret.txt'), 'utf8'), 'host secret');
  } finally { s.destroy(); rmSync(host, { recursive: true, force: true }); }
});

test('a network call fails inside the sandbox: no interface but loopback', { skip }, async () => {
  const s = new Sandbox(limits);
  try {
    const r = await s.run('cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "; exec 3<>/dev/tcp/1.1.1.1/80 && echo connected');
    assert.equal(r.stdout.trim(), 'lo');
    const tcp = await s.exec(['/bin/bash', '-c', 'exec 3<>/dev/tcp/1.1.1.1/80 && echo connected']);
    assert.doesNotMatch(tcp.stdout, /connected/);
    assert.match(tcp.stderr, /unreachable|not known|refused|connect/i);
  } finally { s.destroy(); }
});

test('output beyond the cap is cut and the command still ends cleanly', { skip }, async () => {
  const s = new Sandbox({ ...limits, outputBytes: 1000 });
  try {
    const r = await s.run('yes hello | head -c 100000');
    assert.equal(r.exitCode, 0);
    assert.equal(r.truncated, true);
    assert.equal(r.stdout.length, 1000);
  } finally { s.destroy(); }
});

test('destroying a sandbox removes its working tree from the host', { skip }, async () => {
  const s = new Sandbox(limits);
  await s.writeFile('a.txt', 'x');
  assert.ok(existsSync(join(s.dir, 'a.txt')));
  s.destroy();
  assert.ok(!existsSync(s.root));
});
