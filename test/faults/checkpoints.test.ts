// Corrupt and half-swapped checkpoints: a checkpoint that does not load is quarantined with a message
// and the previous good one is used (or training starts fresh, loudly); a crash between the two
// renames of a checkpoint swap is repaired at start. The real CLI serves, /readyz 200, versions new.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { Store } from '../../src/store/store.ts';
import { recoverFolder } from '../../src/util/atomic-folder.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { stopProcess } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const tmp = tempDir('ocrl-ckpt-');
after(tmp.cleanup);

async function conversation(s: TestServer, c: number): Promise<void> {
  const h = { 'x-session-id': `c-${c}` };
  const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, seed: c }, h);
  const answer = first.json.choices[0].message.content as string;
  await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: answer }, { role: 'user', content: c % 2 ? 'I love it!' : 'No, I wanted a dog.' }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
}

/** A data folder whose trainer took three steps, with checkpoints after steps 2 (previous) and 3 (latest). */
async function trainedDataDir(name: string): Promise<string> {
  const s = await startTestServer();
  try {
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false, concurrency: 8 });
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 2, learningRate: 1e-2, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: join(s.dataDir, 'checkpoints') });
    await trainer.init();
    for (let c = 0; c < 6; c++) { await conversation(s, c); await judge.tick(); await trainer.tick(); }
    assert.equal(trainer.step, 3);
    s.store.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const dir = join(tmp.dir, name);
    cpSync(s.dataDir, dir, { recursive: true });
    return dir;
  } finally {
    await s.close();
  }
}

function serve(dataDir: string): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', dataDir, '--method', 'binary', '--batch-size', '2',
    '--lora-rank', '4', '--lora-alpha', '8', '--judge', 'lexical'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`no start:\n${log}`)); }, 30_000);
    proc.stderr!.on('data', (d) => { log += d; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); } });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}:\n${log}`)); });
  });
}

async function stop(p: ChildProcess): Promise<void> {
  await stopProcess(p, 'SIGTERM');
}

const floorOf = (dir: string) => { const s = new Store(dir); try { return s.versionFloor(); } finally { s.close(); } };

test('a truncated adapter file: the checkpoint is quarantined, the previous one is used, the server is ready with a new version', { timeout: 120_000 }, async () => {
  const dir = await trainedDataDir('truncated');
  const floor = floorOf(dir);
  const adapter = join(dir, 'checkpoints', 'latest', 'adapter_model.safetensors');
  truncateSync(adapter, Math.floor(statSync(adapter).size / 2));
  const p = await serve(dir);
  try {
    assert.match(p.log(), /WARNING: the checkpoint \S+latest cannot be loaded \(.*\); moved it to \S+quarantine/);
    const resumed = /resumed at step 2 from \S+latest\.previous \(saved as version \d+\), serving it as version (\d+)/.exec(p.log());
    assert.ok(resumed, p.log());
    assert.ok(Number(resumed[1]) > floor, `version ${resumed[1]} is not above ${floor}`);
    const ready = await fetch(`${p.url}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    assert.equal(readdirSync(join(dir, 'checkpoints', 'quarantine')).length, 1);
  } finally {
    await stop(p.proc);
  }
});

test('empty trainer states in both checkpoints: both quarantined, training starts fresh with a loud warning, versions still go up', { timeout: 120_000 }, async () => {
  const dir = await trainedDataDir('empty-state');
  const floor = floorOf(dir);
  for (const c of ['latest', 'latest.previous']) writeFileSync(join(dir, 'checkpoints', c, 'trainer_state.json'), '');
  const p = await serve(dir);
  try {
    assert.match(p.log(), /latest cannot be loaded .*not valid JSON/);
    assert.match(p.log(), /latest\.previous cannot be loaded/);
    assert.match(p.log(), /WARNING: no usable checkpoint: training starts again from a fresh adapter/);
    const m = /learning: binary \(version (\d+)\)/.exec(p.log());
    assert.ok(m && Number(m[1]) > floor, p.log());
    assert.equal((await fetch(`${p.url}/readyz`)).status, 200);
    const status = await (await fetch(`${p.url}/admin/status`)).json() as { trainer: { step: number; samples: Record<string, number> } };
    assert.equal(status.trainer.step, 0);
  } finally {
    await stop(p.proc);
  }
});

test('a crash between the two renames of a checkpoint swap: the new checkpoint is put in place at start', { timeout: 120_000 }, async () => {
  const dir = await trainedDataDir('half-swap');
  const ck = join(dir, 'checkpoints');
  const step = (d: string) => JSON.parse(readFileSync(join(d, 'trainer_state.json'), 'utf8')).optimizerStep as number;
  // the state right after "latest → .latest.old" and before ".latest.ready → latest"
  renameSync(join(ck, 'latest.previous'), join(ck, '.latest.old'));
  renameSync(join(ck, 'latest'), join(ck, '.latest.ready'));
  assert.equal(recoverFolder(join(ck, 'latest'), { previous: join(ck, 'latest.previous') }), 'finished an interrupted swap');
  assert.equal(step(join(ck, 'latest')), 3);
  assert.equal(step(join(ck, 'latest.previous')), 2);
  // and when the crash came before the new folder was complete: the old one comes back
  renameSync(join(ck, 'latest'), join(ck, '.latest.old'));
  cpSync(join(ck, 'latest.previous'), join(ck, '.latest.tmp'), { recursive: true });
  // through the real CLI this time
  const p = await serve(dir);
  try {
    assert.match(p.log(), /checkpoint folder: deleted an incomplete write; restored the folder an interrupted swap had moved aside/);
    assert.match(p.log(), /resumed at step 3 from \S+latest \(/);
    assert.ok(!existsSync(join(ck, '.latest.tmp')) && !existsSync(join(ck, '.latest.old')));
  } finally {
    await stop(p.proc);
  }
});
