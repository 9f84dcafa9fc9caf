// Experiment tracking on a real learning server (stories260K, lexical judge, PPO steps): metrics.jsonl
// against /admin/status and across a restart, the policy version right after a publish, the joined
// turn views with their filters and redaction, rollbacks over HTTP and the CLI, and the dashboard's auth.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startLearningServer } from '../helpers/learning-server.ts';
import { post } from '../helpers/server.ts';
import { tempDir } from '../helpers/models.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const KEY = 'dashboard-test-key-0123456789';
const auth = { authorization: `Bearer ${KEY}` };

async function get(url: string, headers: Record<string, string> = auth): Promise<{ status: number; json: any; text: string }> {
  const r = await fetch(url, { headers });
  const text = await r.text();
  let json: any = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text };
}

const metricsLines = (dir: string) => readFileSync(join(dir, 'metrics.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('metrics.jsonl has one line per step that matches /admin/status, the published version is reported at once, and a restart appends', { timeout: 300_000 }, async () => {
  const data = tempDir('ocrl-dash-restart-');
  try {
    let s = await startLearningServer({ apiKey: KEY, dataDir: data.dir });
    for (let c = 0; c < 8; c++) await s.converse(c);
    assert.equal(await s.learn(), 2);
    // no request has been served since the publish: the version reported must already be the new one
    const status = await get(`${s.url}/admin/status`);
    assert.equal(status.json.policyVersion, s.trainer.version);
    assert.equal(status.json.policyVersion, 2);
    const prom = await get(`${s.url}/metrics`);
    assert.match(prom.text, /^openclaw_rl_policy_version 2$/m);
    const lines = metricsLines(data.dir);
    assert.deepEqual(lines.map((l) => [l.event, l.step, l.version, l.status]), [['step', 1, 1, 'published'], ['step', 2, 2, 'published']]);
    const { event, time, ...last } = lines[1];
    assert.equal(event, 'step');
    assert.ok(Date.parse(time) > 0);
    assert.deepEqual(last, JSON.parse(JSON.stringify(status.json.trainer.lastStep)));
    await s.stop();

    // a new process on the same folder resumes and appends after the old lines
    s = await startLearningServer({ apiKey: KEY, dataDir: data.dir });
    assert.equal(s.trainer.step, 2);
    const live0 = await get(`${s.url}/admin/dashboard/live?after=0`);
    assert.equal(live0.json.metrics.lines.length, 2, 'the dashboard sees the lines of the previous run');
    for (let c = 8; c < 12; c++) await s.converse(c);
    assert.equal(await s.learn(), 1);
    const after = metricsLines(data.dir);
    assert.equal(after.length, 3);
    assert.deepEqual(after.slice(0, 2), lines, 'old lines are never rewritten');
    assert.equal(after[2].step, 3);
    const live = await get(`${s.url}/admin/dashboard/live?after=2`);
    assert.equal(live.json.metrics.next, 3);
    assert.deepEqual(live.json.metrics.lines, [after[2]]);
    assert.equal(live.json.overview.policyVersion, s.trainer.version);
    await s.stop();
  } finally {
    data.cleanup();
  }
});

test('turns are joined with votes, majority, hint, advantages, the sampled version and the training step; filters work; secrets stay redacted', { timeout: 300_000 }, async () => {
  const s = await startLearningServer({ apiKey: KEY });
  const secret = 'sk-live-0123456789abcdefghij';
  try {
    for (let c = 0; c < 4; c++) await s.converse(c, c === 1 ? { secret } : {});
    assert.equal(await s.learn(), 1);
    const all = await get(`${s.url}/admin/dashboard/turns?limit=100`);
    assert.equal(all.status, 200);
    assert.ok(!all.text.includes(secret), 'the secret never leaves the server');
    assert.match(all.text, /\[REDACTED\]/);
    const judged = all.json.turns.filter((t: any) => t.judgement);
    assert.equal(judged.length, 4);
    for (const t of judged) {
      assert.equal(t.judgement.status, 'done');
      assert.ok([-1, 0, 1].includes(t.judgement.score));
      assert.ok(t.judgement.votes.length >= 1 && t.judgement.votes[0].kind === 'prm');
      assert.equal(t.sampledVersion, 0);
      assert.equal(t.sample.status, 'trained');
      assert.equal(t.sample.trainedByStep, 1);
      assert.equal(t.sample.trainedIntoVersion, 1);
      assert.equal(typeof t.sample.advantage.mean, 'number');
      assert.ok(t.nextState.text.length > 0);
    }
    // the lexical judge gives a hint for "No, I wanted a story about a dog."
    const negative = judged.filter((t: any) => t.judgement.score === -1);
    for (const t of negative) assert.match(t.judgement.hint ?? '', /dog/);
    // filters: session, reward, time, type
    const one = await get(`${s.url}/admin/dashboard/turns?session=conv-2`);
    assert.ok(one.json.turns.length === 2 && one.json.turns.every((t: any) => t.sessionId === 'conv-2'));
    for (const r of [-1, 1]) {
      const f = await get(`${s.url}/admin/dashboard/turns?reward=${r}`);
      assert.equal(f.json.turns.length, judged.filter((t: any) => t.judgement.score === r).length);
    }
    const future = await get(`${s.url}/admin/dashboard/turns?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    assert.equal(future.json.turns.length, 0);
    const side = await get(`${s.url}/admin/dashboard/turns?type=side`);
    assert.equal(side.json.turns.length, 0);
    for (const bad of ['reward=2', 'reward=x', 'from=yesterday', 'limit=0', 'type=other']) {
      const r = await get(`${s.url}/admin/dashboard/turns?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.json.error.type, 'invalid_request_error');
    }
    // sessions and versions
    const sessions = await get(`${s.url}/admin/dashboard/sessions`);
    assert.equal(sessions.json.sessions.length, 4);
    const versions = await get(`${s.url}/admin/dashboard/versions`);
    assert.equal(versions.json.published, 1);
    assert.deepEqual(versions.json.versions.map((v: any) => [v.version, v.status, v.kept]), [[1, 'published', true], [0, 'base', true]]);
    const samples = await get(`${s.url}/admin/dashboard/versions/1`);
    assert.equal(samples.json.samples.length, 4);
    // the overview
    const live = await get(`${s.url}/admin/dashboard/live`);
    const o = live.json.overview;
    assert.equal(o.model, 'stories');
    assert.equal(o.method, 'binary');
    assert.equal(o.step, 1);
    assert.equal(o.samples.trained, 4);
    assert.equal(o.judge.judged, 4);
    assert.equal(o.judge.retries, 0);
    assert.ok(o.uptimeSeconds >= 0);
  } finally {
    await s.close();
  }
});

test('a rollback serves an archived version again as a new version, sets the undone samples aside, and is logged; the CLI does the same', { timeout: 300_000 }, async () => {
  const s = await startLearningServer({ apiKey: KEY });
  try {
    for (let c = 0; c < 12; c++) await s.converse(c);
    assert.equal(await s.learn(), 3);
    const r = await post(`${s.url}/admin/rollback`, { version: 1 }, auth);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual({ ...r.json, from: undefined }, { target: 1, version: 4, step: 1, samplesSetAside: 8, from: undefined });
    assert.deepEqual(r.json.from, { version: 3, step: 3 });
    const status = await get(`${s.url}/admin/status`);
    assert.equal(status.json.policyVersion, 4);
    assert.equal((await s.engine.versions()).published, 4);
    // the rolled-back weights are those of version 1: same log-probs for the same tokens
    const ids = s.engine.tokenizer.encode('Once upon a time');
    const [a] = await s.engine.score([{ promptIds: ids.slice(0, 3), responseIds: ids.slice(3) }], { adapter: 4 });
    const counts = Object.fromEntries((s.store.db.prepare(`SELECT status, COUNT(*) AS n FROM samples GROUP BY status`).all() as any[]).map((x) => [x.status, Number(x.n)]));
    assert.deepEqual(counts, { trained: 4, rolled_back: 8 });
    const log = metricsLines(s.dataDir);
    assert.deepEqual(log.at(-1), { ...log.at(-1), event: 'rollback', target: 1, version: 4, step: 1, fromVersion: 3 });
    // the next step trains on from version 1's weights (step 2 again), as version 5
    for (let c = 12; c < 16; c++) await s.converse(c);
    assert.equal(await s.learn(), 1);
    assert.equal(s.trainer.step, 2);
    assert.equal(s.trainer.version, 5);
    // bad requests are 4xx with a clear message
    for (const [body, code] of [[{ version: 99 }, 404], [{ version: -1 }, 400], [{ version: 'one' }, 400], ['not json', 400]] as const) {
      const bad = await post(`${s.url}/admin/rollback`, body, auth);
      assert.equal(bad.status, code, JSON.stringify(body));
      assert.ok(bad.json.error.message.length > 10);
    }
    assert.equal((await post(`${s.url}/admin/rollback`, { version: 1 })).status, 401, 'rollback needs the key');
    // the CLI (a real subprocess) rolls back to the base model
    const env = { ...process.env, OPENCLAW_RL_API_KEY: KEY };
    const cli = await run(process.execPath, [BIN, 'rollback', '--version', '0', '--url', s.url], { env });
    assert.match(cli.stdout, /rolled back to version 0: now serving version 6/);
    const [base] = await s.engine.score([{ promptIds: ids.slice(0, 3), responseIds: ids.slice(3) }], { adapter: 'base' });
    const [now] = await s.engine.score([{ promptIds: ids.slice(0, 3), responseIds: ids.slice(3) }], { adapter: 6 });
    assert.deepEqual(Array.from(now), Array.from(base), 'version 0 is the base model');
    assert.ok(a.length > 0);
    await assert.rejects(run(process.execPath, [BIN, 'rollback', '--version', 'x', '--url', s.url], { env }), /--version expects an integer/);
  } finally {
    await s.close();
  }
});

test('the page is public and holds no data; every data route needs the key; a wrong key is refused', { timeout: 120_000 }, async () => {
  const s = await startLearningServer({ apiKey: KEY });
  try {
    const page = await get(`${s.url}/`, {});
    assert.equal(page.status, 200);
    assert.match(page.text, /<title>openclaw-rl dashboard<\/title>/);
    assert.equal((await get(`${s.url}/dashboard/app.js`, {})).status, 200);
    for (const path of ['/admin/dashboard/live', '/admin/dashboard/turns', '/admin/dashboard/versions', '/admin/dashboard/sessions']) {
      assert.equal((await get(`${s.url}${path}`, {})).status, 401, path);
      assert.equal((await get(`${s.url}${path}`, { authorization: 'Bearer wrong-key' })).status, 401, path);
      assert.equal((await get(`${s.url}${path}`)).status, 200, path);
    }
    assert.equal((await get(`${s.url}/admin/dashboard/nothing`)).status, 404);
  } finally {
    await s.close();
  }
});

test('openclaw-rl turns prints each turn joined with its reward, hint and versions, filtered, from the data folder', { timeout: 300_000 }, async () => {
  const s = await startLearningServer();
  try {
    for (let c = 0; c < 4; c++) await s.converse(c, c === 0 ? { secret: 'sk-test-abcdefghijklmnopqrst' } : {});
    await s.learn();
    // read while the server is running (read-only)
    const text = await run(process.execPath, [BIN, 'turns', '--data-dir', s.dataDir]);
    assert.match(text.stdout, /session conv-0 main #0 \(complete\) — sampled with v0, reward [+-]1, trained by step 1 into v1/);
    assert.match(text.stdout, /user: {3}Once upon a time \(my key is \[REDACTED\]\)/);
    assert.ok(!text.stdout.includes('sk-test-abcdefghijklmnopqrst'));
    const json = await run(process.execPath, [BIN, 'turns', '--data-dir', s.dataDir, '--session', 'conv-1', '--json']);
    const rows = json.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(rows.length, 2);
    assert.ok(rows.every((r) => r.sessionId === 'conv-1'));
    const neg = await run(process.execPath, [BIN, 'turns', '--data-dir', s.dataDir, '--reward', '-1', '--json']);
    for (const l of neg.stdout.trim().split('\n').filter(Boolean)) {
      const t = JSON.parse(l);
      assert.equal(t.judgement.score, -1);
      assert.match(t.judgement.hint, /dog/);
    }
    await assert.rejects(run(process.execPath, [BIN, 'turns', '--data-dir', s.dataDir, '--reward', '5']), /--reward must be one of -1, 0, 1/);
  } finally {
    await s.close();
  }
});
