// SIGKILL the serving + training process while it trains, restart it on the same data folder: no
// acknowledged sample is lost, none is trained twice, and the version continues from the checkpoint.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/store.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';
import { stopProcess } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const data = tempDir('ocrl-train-crash-');
after(data.cleanup);

function serve(): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', data.dir, '--method', 'binary', '--batch-size', '2',
    '--learning-rate', '0.01', '--lora-rank', '4', '--lora-alpha', '8', '--judge', 'lexical'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start:\n${log}`)), 30_000);
    proc.stderr!.on('data', (d) => { log += d; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); } });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}:\n${log}`)); });
  });
}

async function converse(url: string, c: number): Promise<void> {
  const h = { 'x-session-id': `k${c}` };
  const p = 'Once upon a time';
  const a = await post(`${url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: p }], max_tokens: 16, temperature: 1, seed: c }, h);
  const answer = a.json.choices[0].message.content;
  await post(`${url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: p }, { role: 'assistant', content: answer }, { role: 'user', content: /dog/.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.' }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
}

const status = async (url: string) => (await (await fetch(`${url}/admin/status`)).json()) as { policyVersion: number; trainer: { step: number; policyVersion: number; samples: Record<string, number> } };

test('SIGKILL while training: restart resumes at the checkpoint under a new version number; samples are neither lost nor trained twice', { timeout: 180_000 }, async () => {
  const a = await serve();
  for (let c = 0; c < 8; c++) await converse(a.url, c);
  for (let i = 0; i < 100 && (await status(a.url)).trainer.step < 2; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok((await status(a.url)).trainer.step >= 2, a.log());
  // more work, and the kill lands while the loop is judging and training it
  await Promise.all([8, 9, 10, 11].map((c) => converse(a.url, c)));
  await new Promise((r) => setTimeout(r, 150));
  await stopProcess(a.proc, 'SIGKILL');
  const before = new Store(data.dir);
  const lastVersionBeforeKill = before.versionFloor();
  before.close();

  const checkpoint = JSON.parse(readFileSync(join(data.dir, 'checkpoints', 'latest', 'trainer_state.json'), 'utf8')) as { optimizerStep: number; version: number };
  const b = await serve();
  try {
    const resumed = new RegExp(`resumed at step ${checkpoint.optimizerStep} from \\S+ \\(saved as version ${checkpoint.version}\\), serving it as version (\\d+)`).exec(b.log());
    assert.ok(resumed, b.log());
    // the number is new: above every version the first process recorded
    assert.ok(Number(resumed[1]) > lastVersionBeforeKill, `${resumed[1]} after ${lastVersionBeforeKill}`);
    assert.match(b.log(), new RegExp(`learning: binary \\(version ${resumed[1]}\\)`));
    // the restarted server finishes what was pending and keeps going
    for (let c = 12; c < 16; c++) await converse(b.url, c);
    // until all 16 conversations' first turns have samples and none is pending
    const total = (x: Record<string, number>) => Object.values(x).reduce((t, n) => t + n, 0);
    for (let i = 0; i < 150; i++) {
      const x = (await status(b.url)).trainer.samples;
      if (total(x) >= 16 && !x.pending) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const st = await status(b.url);
    assert.ok(st.trainer.policyVersion >= checkpoint.version);
  } finally {
    await stopProcess(b.proc, 'SIGTERM');
  }
  const store = new Store(data.dir);
  try {
    // every paired conversation turn has exactly one sample row; each trained sample belongs to one published step
    const turns = store.db.prepare(`SELECT COUNT(*) AS n FROM turns WHERE turn_type = 'main' AND next_state_status = 'paired'`).get() as { n: number };
    const samples = store.db.prepare(`SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id) AS d FROM samples`).get() as { n: number; d: number };
    assert.equal(Number(samples.n), Number(turns.n));
    assert.equal(Number(samples.d), Number(samples.n));
    const orphans = store.db.prepare(`SELECT COUNT(*) AS n FROM samples s WHERE s.status = 'trained' AND NOT EXISTS (SELECT 1 FROM training_steps t WHERE t.step = s.step AND t.status = 'published')`).get() as { n: number };
    assert.equal(Number(orphans.n), 0, 'every trained sample belongs to a surviving step');
    const steps = store.db.prepare(`SELECT step, COUNT(*) AS n FROM training_steps WHERE status = 'published' GROUP BY step HAVING n > 1`).all();
    assert.deepEqual(steps, [], 'no step number was published twice');
  } finally {
    store.close();
  }
});
