// kill -9 at 20 random moments of a serving + judging + training process (checkpoints every 4
// steps), restarting each time on the same data folder: the store stays intact, and the weights
// versions clients see never repeat across processes and never go backwards.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/store.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';
import { stopProcess } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const data = tempDir('ocrl-kill9-');
after(data.cleanup);
const KILLS = 20;

function serve(): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', data.dir, '--method', 'binary', '--batch-size', '2',
    '--checkpoint-every', '4', '--learning-rate', '0.01', '--lora-rank', '4', '--lora-alpha', '8', '--judge', 'lexical', '--threads', '1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`no start:\n${log}`)); }, 30_000);
    proc.stderr!.on('data', (d) => { log += d; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); } });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}:\n${log}`)); });
  });
}

/** Conversations one after another until the process dies; the versions its answers carried, in order. */
async function client(url: string, from: number, versions: number[]): Promise<void> {
  for (let c = from; ; c++) {
    const h = { 'x-session-id': `k-${c}` };
    try {
      const a = await post(`${url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, seed: c }, h);
      if (a.status !== 200) throw new Error(`status ${a.status}: ${a.text}`);
      versions.push(a.json.policy_version);
      const answer = a.json.choices[0].message.content as string;
      const b = await post(`${url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: answer }, { role: 'user', content: /dog/.test(answer) ? 'I love it!' : 'No, a dog story.' }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
      if (b.status === 200) versions.push(b.json.policy_version);
    } catch (e) {
      if ((e as Error).message.startsWith('status')) throw e;
      return; // the server was killed
    }
  }
}

test(`kill -9 at ${KILLS} random moments: integrity ok, versions never repeat across processes or go backwards`, { timeout: 300_000 }, async () => {
  const rng = new Rng(19);
  const seen: number[][] = []; // versions seen, per process
  for (let k = 0; k < KILLS; k++) {
    const p = await serve();
    const versions: number[] = [];
    const running = client(p.url, k * 1000, versions);
    await new Promise((r) => setTimeout(r, 200 + rng.next() * 1000));
    await stopProcess(p.proc, 'SIGKILL');
    await running;
    seen.push(versions);
  }
  const all = seen.flat();
  for (let i = 1; i < all.length; i++) assert.ok(all[i] >= all[i - 1], `version went back: ${all[i - 1]} → ${all[i]} (${JSON.stringify(seen)})`);
  for (let k = 1; k < seen.length; k++) {
    const before = Math.max(0, ...seen.slice(0, k).flat());
    for (const v of seen[k]) assert.ok(v > before || v === 0 && before === 0, `process ${k} served version ${v}, already used before (max ${before})`);
  }
  assert.ok(Math.max(...all) > 0, `training published no version in ${KILLS} lives: ${JSON.stringify(seen)}`);
  const store = new Store(data.dir);
  try {
    assert.equal((store.db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
    // every served version was recorded before it was served, once
    const recorded = new Set(store.db.prepare('SELECT version FROM weights_versions').all().map((r) => Number((r as { version: number }).version)));
    for (const v of new Set(all)) if (v > 0) assert.ok(recorded.has(v), `version ${v} was served but never recorded`);
    const steps = store.db.prepare(`SELECT step, COUNT(*) AS n FROM training_steps WHERE status = 'published' GROUP BY step HAVING n > 1`).all();
    assert.deepEqual(steps, [], 'no step number stands as published twice');
    console.log(`# ${KILLS} kills, ${all.length} answers, versions ${all[0]} … ${all.at(-1)}, ${recorded.size} versions recorded`);
  } finally {
    store.close();
  }
});
