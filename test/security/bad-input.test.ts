// Hostile and broken requests get clear 4xx answers — never a 5xx, a reset, a stack trace or a stall:
// deep nesting, bad percent-encoding, oversize chunked bodies, clients that vanish mid-upload, absurd
// numbers, non-string tool-call arguments, multi-megabyte prompts, bursts beyond the concurrency limit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { stopProcess } from '../helpers/processes.ts';

let s: TestServer;
let stderr = '';
const write = process.stderr.write.bind(process.stderr);
before(async () => {
  s = await startTestServer({ maxBodyBytes: 8 * 2 ** 20, maxConcurrent: 4 });
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => { stderr += String(chunk); return write(chunk, ...rest); }) as typeof process.stderr.write;
});
after(async () => { process.stderr.write = write; await s.close(); });

const chat = (extra: Record<string, unknown>) => post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, ...extra });
/** A request body with `deep` (JSON text nested n levels: JSON.stringify itself cannot build it) at `{{DEEP}}`. */
const withDeep = (template: Record<string, unknown>, n: number, kind: 'array' | 'object') => {
  const nested = kind === 'array' ? '['.repeat(n) + '1' + ']'.repeat(n) : '{"a":'.repeat(n) + '{}' + '}'.repeat(n);
  return JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, ...template }).replace('"{{DEEP}}"', nested);
};
const raw = (body: string) => post(`${s.url}/v1/chat/completions`, body);

test('100k-deep nesting in chat_template_kwargs, tool parameters and tool-call arguments is a 400, not a stack overflow', async () => {
  const calls = (args: unknown) => ({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }] }, { role: 'tool', tool_call_id: 'c', content: 'x' }] });
  const cases = [
    withDeep({ chat_template_kwargs: { x: '{{DEEP}}' } }, 100_000, 'array'),
    withDeep({ tools: [{ type: 'function', function: { name: 'f', parameters: '{{DEEP}}' } }] }, 100_000, 'object'),
    withDeep(calls('{{DEEP}}'), 100_000, 'object'),
  ];
  for (const body of cases) {
    const r = await raw(body);
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.equal(r.json.error.code, 'nesting_too_deep');
  }
  // deep JSON *text* inside the arguments string is only text: rendered or refused, never a crash
  const text = await chat(calls('['.repeat(100_000) + ']'.repeat(100_000)));
  assert.ok(text.status === 200 || text.status === 400, `${text.status} ${text.text.slice(0, 200)}`);
});

test('POST /v1/sessions/%/done is a 400; an unknown session is a 404 and is not recorded', async () => {
  const bad = await post(`${s.url}/v1/sessions/%/done`, {});
  assert.equal(bad.status, 400);
  assert.match(bad.json.error.message, /percent-encoding/);
  const unknown = await post(`${s.url}/v1/sessions/never-seen/done`, {});
  assert.equal(unknown.status, 404);
  assert.equal(s.store.hasSession('never-seen'), false);
  assert.doesNotMatch(s.store.conversations.read().map((r) => JSON.stringify(r)).join('\n'), /never-seen/);
  await chat({}).then((r) => assert.equal(r.status, 200));
  const known = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }, { 'x-session-id': 'known-1' });
  assert.equal(known.status, 200);
  assert.equal((await post(`${s.url}/v1/sessions/known-1/done`, {})).status, 200);
});

/** A raw HTTP request whose body is written in chunks (no content-length). */
function chunked(total: number, opts: { abortAfter?: number } = {}): Promise<{ status: number; body: string } | 'closed'> {
  const u = new URL(`${s.url}/v1/chat/completions`);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method: 'POST', path: u.pathname, headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', (e) => (opts.abortAfter ? resolve('closed') : reject(e)));
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        if (opts.abortAfter && sent >= opts.abortAfter) { req.destroy(); resolve('closed'); return; }
        sent += chunk.length;
        if (!req.write(chunk)) { req.once('drain', pump); return; }
      }
      req.end();
    };
    pump();
  });
}

test('a chunked body over the limit gets a 413 answer, not a reset', async () => {
  const r = await chunked(12 * 2 ** 20);
  assert.notEqual(r, 'closed');
  assert.equal((r as { status: number }).status, 413);
  assert.match((r as { body: string }).body, /request_too_large/);
});

test('a client that disconnects mid-upload is handled quietly: no stack trace, not counted as a 5xx', async () => {
  const before = stderr.length;
  assert.equal(await chunked(4 * 2 ** 20, { abortAfter: 256 * 1024 }), 'closed');
  await new Promise((r) => setTimeout(r, 200));
  assert.doesNotMatch(stderr.slice(before), /at |Error/);
  const metrics = await (await fetch(`${s.url}/metrics`)).text();
  assert.doesNotMatch(metrics, /status="5\d\d"/);
});

test('absurd numbers and wrong shapes are 400s naming the parameter', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ max_tokens: 1e308 }, 'max_tokens'],
    [{ max_completion_tokens: 2 ** 40 }, 'max_completion_tokens'],
    [{ top_k: 1e300 }, 'top_k'],
    [{ seed: 1e300 }, 'seed'],
    [{ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { a: 1 } } }] }] }, 'messages[1].tool_calls[0].function.arguments'],
    [{ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 5 } }] }] }, 'messages[1].tool_calls[0].function.arguments'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: 'not a schema' } }] }, 'tools[0].function.parameters'],
    [{ messages: [{ role: 'tool', tool_call_id: 7, content: 'x' }] }, 'messages[0].tool_call_id'],
  ];
  for (const [extra, param] of cases) {
    const r = await chat(extra);
    assert.equal(r.status, 400, `${JSON.stringify(extra).slice(0, 120)} → ${r.status} ${r.text}`);
    assert.equal(r.json.error.param, param);
  }
});

test('a 7 MB prompt is refused by a length check before tokenization, and other clients are not stalled', async () => {
  const rss0 = process.memoryUsage().rss;
  const big = 'word '.repeat(1.4 * 2 ** 20);
  const t0 = performance.now();
  const [r, small] = await Promise.all([
    chat({ messages: [{ role: 'user', content: big }] }),
    (async () => { await new Promise((res) => setTimeout(res, 20)); const t = performance.now(); const x = await chat({}); return { status: x.status, ms: performance.now() - t }; })(),
  ]);
  const ms = performance.now() - t0;
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'context_length_exceeded');
  assert.equal(small.status, 200);
  console.log(`# 7 MB prompt refused in ${ms.toFixed(0)} ms; a small request meanwhile took ${small.ms.toFixed(0)} ms; RSS +${((process.memoryUsage().rss - rss0) / 2 ** 20).toFixed(0)} MB`);
  assert.ok(ms < 3000, `${ms} ms`);
});

test('a burst beyond --max-concurrent waits in the admission queue instead of getting 429s', async () => {
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => chat({ max_tokens: 8, seed: i, stream: i % 2 === 0 })));
  assert.deepEqual(results.map((r) => r.status), results.map(() => 200));
});

test('the API key comes from a file or the environment; --api-key on the command line is refused', { timeout: 60_000 }, async () => {
  const { spawn, spawnSync } = await import('node:child_process');
  const { writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const { STORIES, tempDir } = await import('../helpers/models.ts');
  const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
  const t = tempDir('ocrl-key-');
  try {
    const refused = spawnSync(process.execPath, [BIN, 'serve', '--model', STORIES, '--api-key', 'visible-in-ps'], { encoding: 'utf8' });
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /--api-key is not accepted: other local users can read command lines \(ps\)/);
    writeFileSync(join(t.dir, 'key'), 'file-key-123\n');
    const proc = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--port', '0', '--data-dir', join(t.dir, 'd'), '--no-train', '--judge', 'none', '--api-key-file', join(t.dir, 'key')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const url = await new Promise<string>((resolve, reject) => {
      proc.stderr!.on('data', (d) => { log += d; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) resolve(m[1]); });
      proc.on('exit', (code) => reject(new Error(`exited ${code}: ${log}`)));
    });
    try {
      assert.equal((await fetch(`${url}/v1/models`)).status, 401);
      assert.equal((await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer file-key-123' } })).status, 200);
    } finally {
      await stopProcess(proc, 'SIGTERM');
    }
  } finally {
    t.cleanup();
  }
});
