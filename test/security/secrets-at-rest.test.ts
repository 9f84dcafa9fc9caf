// Secrets sent through the real server (serve, default --redact all, judging and training on) are
// not recoverable from any file in the data folder — the SQLite database and its WAL, the JSONL logs,
// checkpoints — nor from an export, including by decoding any token ids found there. Training still
// runs on the exact ids (kept encrypted under the key file beside the folder).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { ChatTokenizer } from '../../src/engine/embedded/tokenizer.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';
import { SECRET_CASES } from './secrets.ts';
import { stopProcess } from '../helpers/processes.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const tmp = tempDir('ocrl-secrets-');
after(tmp.cleanup);
const dataDir = join(tmp.dir, 'data');

function serve(): Promise<{ proc: ChildProcess; url: string; log: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', dataDir, '--method', 'combine', '--batch-size', '4',
    '--lora-rank', '4', '--lora-alpha', '8', '--judge', 'lexical', '--context-overflow', 'truncate'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`no start:\n${log}`)); }, 30_000);
    proc.stderr!.on('data', (d) => { log += d; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) { clearTimeout(timer); resolve({ proc, url: m[1], log: () => log }); } });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}:\n${log}`)); });
  });
}

const filesUnder = (dir: string): string[] => readdirSync(dir).flatMap((n) => { const p = join(dir, n); return statSync(p).isDirectory() ? filesUnder(p) : [p]; });

/** Every run of comma-separated integers (a JSON array of token ids) in `text`, decoded. */
function decodedIdRuns(text: string, tok: ChatTokenizer): string[] {
  return [...text.matchAll(/\[(\d+(?:,\s*\d+){2,})\]/g)].map((m) => m[1].split(',').map(Number)).filter((ids) => ids.every((i) => i < 512)).map((ids) => tok.decode(ids, false));
}

test(`${SECRET_CASES.length} kinds of secret sent through serve are recoverable from no file in the data folder and no export`, { timeout: 240_000 }, async () => {
  const p = await serve();
  try {
    for (const [i, c] of SECRET_CASES.entries()) {
      const h = { 'x-session-id': `sec-${i}` };
      // the secret in the user's message, in a tool call's arguments, and in the user's reply
      const first = await post(`${p.url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: c.text }], max_tokens: 8, seed: i }, h);
      assert.equal(first.status, 200, first.text);
      const answer = first.json.choices[0].message.content as string;
      const history = [{ role: 'user', content: c.text }, { role: 'assistant', content: answer }];
      const second = await post(`${p.url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [...history, { role: 'user', content: `No, that is wrong. Remember ${c.text}` }], max_tokens: 8, seed: i,
        tools: [{ type: 'function', function: { name: 'login', parameters: { type: 'object', properties: { note: { type: 'string', description: c.text } } } } }] }, h);
      assert.equal(second.status, 200, second.text);
      await post(`${p.url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [...history, { role: 'user', content: 'No, I wanted a dog.' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'login', arguments: JSON.stringify({ note: c.text }) } }] }, { role: 'tool', tool_call_id: 'c1', content: c.text }], max_tokens: 4 }, { ...h, 'x-session-done': '1' });
    }
    // the judge and the trainer ran on the redacted store
    for (let i = 0; i < 100; i++) {
      const st = await (await fetch(`${p.url}/admin/status`)).json() as { trainer: { step: number } };
      if (st.trainer.step >= 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const st = await (await fetch(`${p.url}/admin/status`)).json() as { trainer: { step: number } };
    assert.ok(st.trainer.step >= 1, `no training step: ${p.log()}`);
  } finally {
    await stopProcess(p.proc, 'SIGTERM');
  }
  const exported = (await promisify(execFile)(process.execPath, [BIN, 'export', '--data-dir', dataDir], { maxBuffer: 64 * 2 ** 20 })).stdout;
  assert.ok(exported.length > 0);
  const tok = ChatTokenizer.load(STORIES);
  const files = filesUnder(dataDir);
  assert.ok(files.some((f) => f.endsWith('openclaw-rl.sqlite')) && files.some((f) => f.endsWith('conversations.jsonl')) && files.some((f) => f.includes('checkpoints')));
  assert.ok(existsSync(`${dataDir}.key`) && !files.some((f) => f.endsWith('.key')), 'the key lives beside the data folder, not in it');
  const leaks: string[] = [];
  for (const [where, text] of [...files.map((f) => [f, readFileSync(f).toString('latin1') + '\n' + readFileSync(f, 'utf8')] as const), ['export', exported] as const]) {
    const decoded = decodedIdRuns(text, tok).join('\n');
    for (const c of SECRET_CASES) {
      if (text.includes(c.secret)) leaks.push(`${c.kind} in ${where}`);
      if (decoded.includes(c.secret)) leaks.push(`${c.kind} in ${where} (decoded from token ids)`);
    }
  }
  assert.deepEqual(leaks, []);
  // the trainer's exact ids are there, encrypted; the text columns are redacted
  const db = new DatabaseSync(join(dataDir, 'openclaw-rl.sqlite'), { readOnly: true });
  try {
    const row = db.prepare(`SELECT prompt_ids, response_ids, request_json FROM turns ORDER BY id LIMIT 1`).get() as { prompt_ids: string; response_ids: string; request_json: string };
    assert.match(row.prompt_ids, /^enc1:/);
    assert.match(row.response_ids, /^enc1:/);
    assert.match(row.request_json, /\[REDACTED\]/);
    const trained = db.prepare(`SELECT COUNT(*) AS n FROM samples WHERE status = 'trained'`).get() as { n: number };
    assert.ok(Number(trained.n) >= 4);
  } finally {
    db.close();
  }
});
