// The store on its own: migrations, the turn lifecycle, redaction, retention, export.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/store.ts';
import { redactSecrets } from '../../src/store/redact.ts';
import { tempDir } from '../helpers/models.ts';

const t = tempDir('ocrl-store-');
after(t.cleanup);
const turn = (sessionId: string, content: string) => ({ sessionId, idSource: 'header', turnType: 'main' as const, typeSource: 'header', request: { messages: [{ role: 'user', content }] }, promptIds: [1, 2, 3], policyVersion: 0 });
const end = { status: 'complete' as const, responseIds: [4, 5], responseLogprobs: [-0.1, -0.2], responseText: 'hi', answer: { content: 'hi', reasoning: null, toolCalls: [] }, finishReason: 'stop', policyVersion: 0 };

test('redaction: API keys, bearer tokens, JWTs and key=value secrets are hidden; ordinary text is not', () => {
  const table: [string, string][] = [
    ['my key is sk-abcdefghijklmnop1234 ok', 'my key is [REDACTED] ok'],
    ['Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456', 'Authorization: Bearer [REDACTED]'],
    ['token eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0NTY3ODkw.SflKxwRJSMeKKF2QT4fwpM', 'token [REDACTED]'],
    ['password: hunter2hunter2hunter2', 'password: [REDACTED]'],
    ['"api_key": "abcd1234efgh5678"', '"api_key": "[REDACTED]"'],
    ['Once upon a time, a dog named Max ran to the park.', 'Once upon a time, a dog named Max ran to the park.'],
    ['the sky-blue kite-flying day', 'the sky-blue kite-flying day'],
  ];
  for (const [input, expected] of table) assert.equal(redactSecrets(input), expected, input);
});

test('turn lifecycle, JSONL log with redaction (no token ids), retention and export', async () => {
  const dir = join(t.dir, 'a');
  const store = new Store(dir);
  const id = store.beginTurn(turn('s1', 'my key is sk-abcdefghijklmnop1234'));
  assert.equal(store.turn(id)!.status, 'in_progress');
  store.finishTurn(id, end);
  assert.equal(store.turn(id)!.status, 'complete');
  // with --redact logs the database keeps the text verbatim; the log is redacted and has no token ids
  assert.match(store.turn(id)!.request_json, /sk-abcdefghijklmnop1234/);
  const log = readFileSync(join(dir, 'conversations.jsonl'), 'utf8');
  assert.doesNotMatch(log, /sk-abcdefghijklmnop1234/);
  assert.match(log, /\[REDACTED\]/);
  assert.doesNotMatch(log, /promptIds|responseIds/);
  const id2 = store.beginTurn(turn('s1', 'second'));
  store.close();
  // reopening: same schema version, and the unfinished turn counts as aborted (a clean close marks it;
  // after a crash the next start does — see test/faults/kill9.test.ts)
  const again = new Store(dir);
  assert.equal(again.recoveredAborted, 0);
  assert.equal(again.turn(id2)!.status, 'aborted');
  assert.equal(again.turn(id2)!.idx, 1);
  const exported = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url)), 'export', '--data-dir', dir]);
  const rows = exported.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(rows.length, 2);
  assert.equal(rows[0].promptIds, undefined, 'a redacted export has no token ids');
  assert.equal(rows[0].promptTokens, 3);
  assert.equal(rows[0].request.messages[0].content, 'my key is [REDACTED]');
  const raw = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url)), 'export', '--data-dir', dir, '--no-redact']);
  assert.deepEqual(JSON.parse(raw.stdout.split('\n')[0]).promptIds, [1, 2, 3]);
  assert.equal(again.deleteOlderThan(Date.now() + 1000), 2);
  assert.equal(again.turns().length, 0);
  again.close();
});
