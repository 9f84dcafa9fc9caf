// Crash safety: SIGKILL the server in the middle of a stream and of a burst of requests, restart it on
// the same data folder, and check that every completed turn is in the store exactly once, the
// interrupted ones are marked aborted, and the JSONL log still holds everything written before.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/store.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';
import { stopProcess } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const data = tempDir('ocrl-restart-');
after(data.cleanup);

function startServe(): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', data.dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 30_000);
    proc.stderr!.on('data', (d) => {
      log += d;
      const m = /at (http:\/\/[^\s]+)\/v1/.exec(log);
      if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}):\n${log}`)); });
  });
}

const body = (content: string, max: number) => ({ model: 'stories260k-hf', messages: [{ role: 'user', content }], max_tokens: max, temperature: 1 });

test('SIGKILL mid-stream and mid-burst loses nothing acknowledged, and the interrupted turns are aborted after restart', { timeout: 120_000 }, async () => {
  const a = await startServe();
  // completed work: a short conversation and a burst of requests
  const completed: string[] = [];
  for (const content of ['Once upon a time', 'The dog', 'A cat']) {
    const r = await post(`${a.url}/v1/chat/completions`, body(content, 10), { 'x-session-id': 'kept' });
    assert.equal(r.status, 200);
    completed.push(r.json.choices[0].message.content);
  }
  const burst = await Promise.all(Array.from({ length: 6 }, (_, i) => post(`${a.url}/v1/chat/completions`, body(`Tom had ${i}`, 6))));
  assert.ok(burst.every((r) => r.status === 200));

  // in flight when the process dies: one stream we are reading, and a burst of long requests
  const inFlight = Array.from({ length: 3 }, () => post(`${a.url}/v1/chat/completions`, body('Once upon a time', 500)).catch(() => null));
  const stream = await fetch(`${a.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-session-id': 'streaming' }, body: JSON.stringify({ ...body('Once upon a time', 500), stream: true }) });
  const reader = stream.body!.getReader();
  await reader.read();
  await reader.read();
  await stopProcess(a.proc, 'SIGKILL');
  await Promise.all(inFlight);
  await reader.read().catch(() => null);

  const b = await startServe();
  try {
    assert.match(b.log(), /marked [1-9]\d* turn\(s\) interrupted by the last shutdown as aborted/);
    const r = await post(`${b.url}/v1/chat/completions`, body('After the restart', 4));
    assert.equal(r.status, 200);
  } finally {
    await stopProcess(b.proc, 'SIGTERM');
  }

  const store = new Store(data.dir);
  try {
    const turns = store.turns();
    const complete = turns.filter((t) => t.status === 'complete');
    const aborted = turns.filter((t) => t.status === 'aborted');
    // 3 + 6 before the crash, 1 after; each exactly once
    assert.equal(complete.length, 10);
    assert.deepEqual(store.turns('kept').map((t) => t.response_text), completed);
    assert.ok(aborted.length >= 1 && aborted.length <= 4, `aborted ${aborted.length}`);
    assert.ok(aborted.some((t) => t.session_id === 'streaming'));
    assert.equal(turns.filter((t) => t.status === 'in_progress').length, 0);
    // the log still holds every turn completed before the crash
    const logged = store.conversations.read().filter((e) => e.event === 'turn' && e.status === 'complete');
    assert.equal(logged.length, 10);
    // the conversation before the crash kept its pairing
    const kept = store.turns('kept');
    assert.deepEqual(kept.map((t) => t.idx), [0, 1, 2]);
  } finally {
    store.close();
  }
});
