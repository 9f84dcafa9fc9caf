// serve-tinker (src/engine/tinker/server.ts, sessions.ts) over the real stories260K engine: sessions
// and samplers over stored checkpoints survive a server restart, idle sessions end (with their
// samplers and training client) while heartbeating ones live on, a damaged sessions file loses the
// sessions but not the server, and top-k prompt log-probs are answered in JSON and protobuf with the
// engine's own numbers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../../src/engine/embedded/engine.ts';
import { TinkerServer, type RunningTinkerServer } from '../../../src/engine/tinker/server.ts';
import { decodeSampleResponse } from '../../../src/engine/tinker/proto.ts';
import { STORIES, tempDir } from '../../helpers/models.ts';

let engine: EmbeddedEngine;
before(async () => { engine = await EmbeddedEngine.load(STORIES, { threads: 1 }); });
after(async () => { await engine.close(); });

function client(url: string) {
  const call = async (path: string, body?: unknown) => {
    const r = await fetch(`${url}/api/v1/${path}`, { method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : null };
  };
  const result = async (requestId: string, accept = 'application/json'): Promise<{ json: any; bytes: Uint8Array; proto: boolean }> => {
    for (;;) {
      const r = await fetch(`${url}/api/v1/retrieve_future`, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ request_id: requestId }) });
      const bytes = new Uint8Array(await r.arrayBuffer());
      if ((r.headers.get('content-type') ?? '').includes('protobuf')) return { json: null, bytes, proto: true };
      const json = JSON.parse(Buffer.from(bytes).toString());
      if (json.type !== 'try_again') return { json, bytes, proto: false };
    }
  };
  return { call, result };
}

const PROMPT = [1, 403, 407, 261, 378, 400, 261];

async function start(dir: string, sessionIdleMs?: number): Promise<RunningTinkerServer> {
  return new TinkerServer({ engine, modelName: 'stories', dataDir: dir, port: 0, longPollMs: 2000, ...(sessionIdleMs ? { sessionIdleMs } : {}) }).listen();
}

test('a session and its samplers over stored checkpoints survive a server restart; in-memory snapshots say why they are gone', { timeout: 120_000 }, async () => {
  const t = tempDir('ocrl-tinker-sessions-');
  let server = await start(t.dir);
  try {
    let { call, result } = client(server.url);
    const s = (await call('create_session', { tags: [], sdk_version: '0.25.0', type: 'create_session' })).json.session_id as string;
    const m = await call('create_model', { session_id: s, model_seq_id: 0, base_model: 'stories', lora_config: { rank: 4, seed: 1 }, type: 'create_model' });
    const model = (await result(m.json.request_id)).json.model_id as string;
    const named = (await result((await call('save_weights_for_sampler', { model_id: model, seq_id: 1, path: 'kept', type: 'save_weights_for_sampler' })).json.request_id)).json.path as string;
    const byPath = (await call('create_sampling_session', { session_id: s, sampling_session_seq_id: 1, model_path: named, type: 'create_sampling_session' })).json.sampling_session_id as string;
    const base = (await call('create_sampling_session', { session_id: s, sampling_session_seq_id: 2, base_model: 'stories', type: 'create_sampling_session' })).json.sampling_session_id as string;
    const ephemeral = (await result((await call('save_weights_for_sampler', { model_id: model, seq_id: 2, sampling_session_seq_id: 3, type: 'save_weights_for_sampler' })).json.request_id)).json.sampling_session_id as string;
    const sample = async (sampler: string, seq: number) => {
      const r = await call('asample', { sampling_session_id: sampler, seq_id: seq, num_samples: 1, prompt: { chunks: [{ type: 'encoded_text', tokens: PROMPT }] }, sampling_params: { max_tokens: 5, temperature: 0.7, seed: 3 }, type: 'sample' });
      return r.status === 200 ? (await result(r.json.request_id)).json.sequences[0] : r;
    };
    const before1 = await sample(byPath, 1), before2 = await sample(base, 1);

    await server.close();
    server = await start(t.dir);
    ({ call, result } = client(server.url));
    assert.deepEqual((await call('session_heartbeat', { session_id: s, type: 'session_heartbeat' })).json, { type: 'session_heartbeat' });
    // the samplers over the stored checkpoint and the base answer as before the restart
    assert.deepEqual(await sample(byPath, 2), before1);
    assert.deepEqual(await sample(base, 2), before2);
    assert.equal((await call(`samplers/${encodeURIComponent(byPath)}`)).json.model_path, named);
    // an in-memory snapshot and the training client did not survive, and the answers say so
    const gone = await sample(ephemeral, 1);
    assert.equal(gone.status, 404);
    assert.match(gone.json.detail, /do not survive a restart/);
    assert.equal((await call('get_info', { model_id: model, type: 'get_info' })).status, 404);
    // the session still opens new training clients
    const m2 = await call('create_model', { session_id: s, model_seq_id: 1, base_model: 'stories', lora_config: { rank: 4 }, type: 'create_model' });
    assert.equal(m2.status, 200);
    await result(m2.json.request_id);
  } finally { await server.close(); t.cleanup(); }
});

test('an idle session ends with its samplers and training client; one that heartbeats lives on', { timeout: 60_000 }, async () => {
  const t = tempDir('ocrl-tinker-sessions-');
  const server = await start(t.dir, 1200);
  const { call, result } = client(server.url);
  try {
    const idle = (await call('create_session', { type: 'create_session' })).json.session_id as string;
    const alive = (await call('create_session', { type: 'create_session' })).json.session_id as string;
    const m = await call('create_model', { session_id: idle, model_seq_id: 0, base_model: 'stories', lora_config: { rank: 4 }, type: 'create_model' });
    const model = (await result(m.json.request_id)).json.model_id as string;
    const sampler = (await call('create_sampling_session', { session_id: idle, sampling_session_seq_id: 0, base_model: 'stories', type: 'create_sampling_session' })).json.sampling_session_id as string;
    const beat = setInterval(() => void call('session_heartbeat', { session_id: alive, type: 'session_heartbeat' }), 200);
    try {
      let status = 200;
      for (let i = 0; i < 40 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 250));
        status = (await call('get_info', { model_id: model, type: 'get_info' })).status;
      }
      assert.equal(status, 404, 'the training client ended with its session');
    } finally { clearInterval(beat); }
    const hb = await call('session_heartbeat', { session_id: idle, type: 'session_heartbeat' });
    assert.equal(hb.status, 404);
    assert.match(hb.json.detail, /ended after 1 s without a heartbeat/);
    assert.equal((await call(`samplers/${encodeURIComponent(sampler)}`)).status, 404);
    assert.equal((await call('session_heartbeat', { session_id: alive, type: 'session_heartbeat' })).status, 200);
    assert.match((await call('session_heartbeat', { session_id: 'never', type: 'session_heartbeat' })).json.detail, /never created/);
  } finally { await server.close(); t.cleanup(); }
});

test('a damaged sessions file is set aside: the server starts without sessions', async () => {
  const t = tempDir('ocrl-tinker-sessions-');
  writeFileSync(join(t.dir, 'sessions.json'), '{"version": 1, "sessions": [');
  const server = await start(t.dir);
  try {
    const { call } = client(server.url);
    assert.equal((await call('create_session', { type: 'create_session' })).status, 200);
    assert.ok(readdirSync(t.dir).some((f) => f.startsWith('sessions.json.corrupt-')));
  } finally { await server.close(); t.cleanup(); }
});

test('top-k prompt log-probs: k alternatives per position, most likely first, the engine\'s own numbers, in JSON and protobuf; bad k is a 400', { timeout: 60_000 }, async () => {
  const t = tempDir('ocrl-tinker-topk-');
  const server = await start(t.dir);
  const { call, result } = client(server.url);
  try {
    const body = { base_model: 'stories', num_samples: 1, prompt: { chunks: [{ type: 'encoded_text', tokens: PROMPT }] }, sampling_params: { max_tokens: 1, temperature: 1 }, topk_prompt_logprobs: 4, type: 'sample' };
    const r = (await result((await call('asample', body)).json.request_id)).json;
    const [direct] = await engine.scoreTopK([{ promptIds: [PROMPT[0]], responseIds: PROMPT.slice(1) }], 4, { adapter: 'base' });
    assert.equal(r.topk_prompt_logprobs.length, PROMPT.length);
    assert.equal(r.topk_prompt_logprobs[0], null);
    assert.equal(r.prompt_logprobs[0], null);
    for (let q = 1; q < PROMPT.length; q++) {
      const row = r.topk_prompt_logprobs[q] as [number, number][];
      assert.equal(row.length, 4);
      row.forEach(([id, lp], j) => {
        assert.equal(id, direct.topIds[q - 1][j]);
        assert.equal(lp, direct.topLogprobs[q - 1][j]);
        if (j > 0) assert.ok(lp <= row[j - 1][1], 'most likely first');
      });
      // the actual token is never more likely than the top choice
      assert.ok(r.prompt_logprobs[q] <= row[0][1] + 1e-7);
    }
    const p = await result((await call('asample', { ...body, seq_id: 0 })).json.request_id, 'application/x-protobuf');
    assert.ok(p.proto);
    const decoded = decodeSampleResponse(p.bytes);
    decoded.topk_prompt_logprobs!.slice(1).forEach((row, q) => row!.forEach(([id, lp], j) => {
      assert.equal(id, r.topk_prompt_logprobs[q + 1][j][0]);
      assert.ok(Math.abs(lp - r.topk_prompt_logprobs[q + 1][j][1]) < 1e-6);
    }));
    for (const k of [-1, 1.5, 'x', 10_000]) assert.equal((await call('asample', { ...body, topk_prompt_logprobs: k })).status, 400, `k = ${k}`);
  } finally { await server.close(); t.cleanup(); }
});
