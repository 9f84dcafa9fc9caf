// Stopping the child processes a test started, without hanging the test file: a child that has
// already exited resolves at once (its 'exit' event will not fire again), and one that does not
// exit within the grace period after the signal is killed. On a loaded machine a failing test's
// cleanup used to wait forever on a child that had died earlier, keeping the whole file alive.
import type { ChildProcess } from 'node:child_process';

export async function stopProcess(p: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 60_000): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  p.kill(signal);
  if (signal === 'SIGKILL') return exited;
  const timer = setTimeout(() => { if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); }, graceMs);
  try { await exited; } finally { clearTimeout(timer); }
}
