// A full disk at run time: the database refuses writes (SQLite's own limit, max_page_count, gives a
// real SQLITE_FULL) and the JSONL log's file system says ENOSPC (/dev/full). Requests get a clear 507,
// never the "cannot rollback" error a second ROLLBACK used to hide it behind; no JSONL record is torn
// into the next; serving resumes once there is room; shutdown leaves no turn in progress.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, post } from '../helpers/server.ts';
import { DatabaseSync } from 'node:sqlite';
import { JsonlLog } from '../../src/store/jsonl.ts';
import { tempDir } from '../helpers/models.ts';

const ask = (url: string, stream = false, session = 'disk') => post(`${url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 6, stream }, { 'x-session-id': session });

test('database full: requests get 507 with the real reason, serving resumes when space returns, nothing is left in progress', { timeout: 60_000 }, async () => {
  const s = await startTestServer();
  try {
    assert.equal((await ask(s.url)).status, 200);
    const pages = Number((s.store.db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count);
    s.store.db.exec(`PRAGMA max_page_count = ${pages}`);
    let full = null;
    for (let i = 0; i < 20 && !full; i++) { const r = await ask(s.url, i % 2 === 1, `disk-${i}`); if (r.status !== 200) full = r; }
    assert.ok(full, 'the database never filled up');
    assert.equal(full.status, 507, full.text);
    assert.equal(full.json.error.code, 'insufficient_storage');
    assert.match(full.json.error.message, /disk is full/);
    assert.doesNotMatch(full.text, /cannot rollback/);
    s.store.db.exec('PRAGMA max_page_count = 1073741823');
    assert.equal((await ask(s.url)).status, 200, 'serving resumes once there is room');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /status="500"/);
    // a clean shutdown (server, engine, store), then a look at what it left
    await s.server.close(); await s.engine.close(); s.store.close();
    const db = new DatabaseSync(join(s.dataDir, 'openclaw-rl.sqlite'), { readOnly: true });
    try {
      const open = db.prepare(`SELECT COUNT(*) AS n FROM turns WHERE status = 'in_progress'`).get() as { n: number };
      assert.equal(Number(open.n), 0, 'the clean shutdown closed every turn');
      const turns = db.prepare('SELECT COUNT(*) AS n FROM turns').get() as { n: number };
      assert.ok(Number(turns.n) >= 2);
    } finally {
      db.close();
    }
  } finally {
    rmSync(s.dataDir, { recursive: true, force: true });
  }
});

test('JSONL log on a full file system: the request still succeeds (the database has the turn), the failure is counted, no record is torn into the next', { timeout: 60_000 }, async () => {
  if (!existsSync('/dev/full')) return;
  const s = await startTestServer();
  const file = join(s.dataDir, 'conversations.jsonl');
  try {
    assert.equal((await ask(s.url)).status, 200);
    renameSync(file, `${file}.saved`);
    symlinkSync('/dev/full', file); // every write: ENOSPC
    const r = await ask(s.url, true);
    assert.equal(r.status, 200);
    assert.match(r.text, /data: \[DONE\]/);
    assert.ok(s.store.logFailures >= 1);
    unlinkSync(file);
    renameSync(`${file}.saved`, file);
    // a torn tail (as a write cut short by ENOSPC leaves it), then more records
    appendFileSync(file, '{"event":"turn","id":99,"respo');
    const log = new JsonlLog(file);
    log.append({ event: 'probe', n: 1 });
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    assert.equal(lines.at(-2), '{"event":"turn","id":99,"respo');
    assert.deepEqual(JSON.parse(lines.at(-1)!), { event: 'probe', n: 1 });
    assert.deepEqual(log.read().at(-1), { event: 'probe', n: 1 });
  } finally {
    await s.close();
  }
});

test('a log whose last record was torn by a crash starts the next record on a new line when opened', () => {
  const t = tempDir('ocrl-torn-');
  try {
    const file = join(t.dir, 'x.jsonl');
    appendFileSync(file, '{"a":1}\n{"a":2,"b"');
    new JsonlLog(file).append({ a: 3 });
    assert.deepEqual(new JsonlLog(file).read(), [{ a: 1 }, { a: 3 }]);
  } finally {
    t.cleanup();
  }
});
