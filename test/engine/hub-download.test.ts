// Downloads from the Hugging Face Hub, against a local DOUBLE of the Hub (127.0.0.1, built from the endpoints
// huggingface_hub documents: /api/models/{repo}/revision/{rev} and /{repo}/resolve/{commit}/{file} with
// X-Linked-Etag / X-Linked-Size and a CDN redirect for large files, Range requests) serving the stories260K
// files: the standard cache layout, resume after a cut connection, the token for gated models, the cache
// reused without the network, offline mode, and the CLI on a model id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync, lstatSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { snapshotDownload, repoFolder } from '../../src/engine/embedded/hub-download.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const COMMIT = 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00';
const FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'model.safetensors', 'reference.json'];
const content = new Map(FILES.map((f) => [f, readFileSync(join(STORIES, f))]));
const etagOf = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The double: one public repo, one gated repo (token hf_test); cuts the first weights download halfway. */
let server: Server, url = '';
const requests: { method: string; path: string; range?: string; auth?: string }[] = [];
let cutNext = true;
before(async () => {
  server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    requests.push({ method: req.method!, path, range: req.headers.range, auth: req.headers.authorization });
    const m = /^\/api\/models\/(test-org\/(?:stories|gated))\/revision\/main$/.exec(path);
    const gated = path.includes('test-org/gated');
    if (gated && req.headers.authorization !== 'Bearer hf_test') { res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"Access to model test-org/gated is restricted."}'); return; }
    if (m) { res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: m[1], sha: COMMIT, siblings: [...FILES, 'README.md'].map((rfilename) => ({ rfilename })) })); return; }
    const r = /^\/test-org\/(?:stories|gated)\/resolve\/([0-9a-f]{40}|main)\/(.+)$/.exec(path);
    if (r && content.has(r[2])) {
      const body = content.get(r[2])!;
      const etag = etagOf(body);
      const common = { 'x-repo-commit': COMMIT };
      if (r[2].endsWith('.safetensors')) { // a large (LFS) file: its identity in X-Linked-*, the body on the "CDN"
        res.writeHead(302, { ...common, location: `/cdn/${etag}`, 'x-linked-etag': `"${etag}"`, 'x-linked-size': String(body.length), etag: '"pointer"' }).end();
        return;
      }
      res.writeHead(200, { ...common, etag: `"${etag}"`, 'content-length': body.length });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(path);
    const body = cdn ? [...content.values()].find((b) => etagOf(b) === cdn[1]) : undefined;
    if (body) {
      const from = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
      res.writeHead(from ? 206 : 200, { 'content-length': body.length - from, ...(from ? { 'content-range': `bytes ${from}-${body.length - 1}/${body.length}` } : {}) });
      if (cutNext && from === 0) { cutNext = false; res.write(body.subarray(0, body.length >> 1), () => res.destroy()); return; }
      res.end(body.subarray(from));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

test('the standard cache layout: blobs by ETag, a commit snapshot of links, refs/main; a cut download resumes with Range', async () => {
  const t = tempDir();
  try {
    const lines: string[] = [];
    const snap = await snapshotDownload('test-org/stories', { endpoint: url, cacheDir: t.dir, token: '', log: (l) => lines.push(l) });
    const folder = repoFolder(t.dir, 'test-org/stories');
    assert.equal(snap, join(folder, 'snapshots', COMMIT));
    assert.equal(readFileSync(join(folder, 'refs', 'main'), 'utf8'), COMMIT);
    for (const f of FILES.filter((f) => f !== 'reference.json')) {
      assert.ok(lstatSync(join(snap, f)).isSymbolicLink(), f);
      assert.equal(readlinkSync(join(snap, f)), `../../blobs/${etagOf(content.get(f)!)}`);
      assert.ok(readFileSync(join(snap, f)).equals(content.get(f)!), `${f} is byte-identical`);
    }
    assert.ok(!existsSync(join(snap, 'reference.json')) && !existsSync(join(snap, 'README.md')), 'only what a model folder needs');
    const cdn = requests.filter((r) => r.path.startsWith('/cdn/') && r.method === 'GET');
    assert.equal(cdn.length, 2);
    // the second request asks only for what the first did not deliver
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(cdn[1].range ?? '')?.[1]);
    assert.ok(resumedAt > 0 && resumedAt <= content.get('model.safetensors')!.length >> 1, cdn[1].range);
    assert.ok(lines.some((l) => /resuming at/.test(l)), lines.join('\n'));
    // a second call finds everything in place: one look at the revision, no file downloads
    const before = requests.length;
    await snapshotDownload('test-org/stories', { endpoint: url, cacheDir: t.dir, token: '' });
    assert.deepEqual(requests.slice(before).map((r) => r.path), ['/api/models/test-org/stories/revision/main']);
  } finally {
    t.cleanup();
  }
});

test('a gated model needs the token: a clear message without it, the download with it', async () => {
  const t = tempDir();
  try {
    await assert.rejects(snapshotDownload('test-org/gated', { endpoint: url, cacheDir: t.dir, token: '' }), /test-org\/gated needs access \(HTTP 401\).*set HF_TOKEN/);
    const snap = await snapshotDownload('test-org/gated', { endpoint: url, cacheDir: t.dir, token: 'hf_test' });
    assert.ok(readFileSync(join(snap, 'config.json')).equals(content.get('config.json')!));
    assert.ok(requests.filter((r) => r.path.includes('gated/resolve')).every((r) => r.auth === 'Bearer hf_test'));
  } finally {
    t.cleanup();
  }
});

test('the CLI on a model id: downloads with HF_TOKEN into HF_HUB_CACHE, then works offline from the cache', async () => {
  const t = tempDir();
  try {
    const ref = JSON.parse(content.get('reference.json')!.toString());
    const args = [BIN, 'generate', '--model', 'test-org/gated', '--prompt', '', '--max-tokens', '6', '--temperature', '0', '--json'];
    const env = { ...process.env, OPENCLAW_RL_MODEL: '', HF_ENDPOINT: url, HF_HUB_CACHE: t.dir, HF_TOKEN: 'hf_test', HF_HUB_OFFLINE: '' };
    const online = await promisify(execFile)(process.execPath, args, { env });
    assert.deepEqual(JSON.parse(online.stdout).ids, ref.greedy_from_bos.generated_ids.slice(0, 6));
    const offline = await promisify(execFile)(process.execPath, args, { env: { ...env, HF_ENDPOINT: 'http://127.0.0.1:9', HF_HUB_OFFLINE: '1', HF_TOKEN: '' } });
    assert.deepEqual(JSON.parse(offline.stdout).ids, ref.greedy_from_bos.generated_ids.slice(0, 6));
    const noToken = await promisify(execFile)(process.execPath, args, { env: { ...env, HF_TOKEN: '', HF_HUB_CACHE: join(t.dir, 'empty'), HF_HOME: join(t.dir, 'home') } }).catch((e) => e);
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /could not download 'test-org\/gated': test-org\/gated needs access \(HTTP 401\)/);
  } finally {
    t.cleanup();
  }
});
