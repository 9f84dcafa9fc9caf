// serve-tinker (src/engine/tinker/server.ts) over the real stories260K engine, driven with raw HTTP
// as the Python SDK would: handshake, sessions, futures, JSON and protobuf bodies, ordering,
// idempotency, checkpoints by URI, and bad input answered with 4xx while the server keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../../src/engine/embedded/engine.ts';
import { TinkerServer, type RunningTinkerServer } from '../../../src/engine/tinker/server.ts';
import { encodeForwardBackwardRequest, decodeForwardBackwardOutput, decodeSampleResponse } from '../../../src/engine/tinker/proto.ts';
import { STORIES, tempDir } from '../../helpers/models.ts';

let engine: EmbeddedEngine, server: RunningTinkerServer, url: string;
const data = tempDir('ocrl-serve-tinker-');

before(async () => {
  engine = await EmbeddedEngine.load(STORIES, { threads: 1 });
  server = await new TinkerServer({ engine, modelName: 'stories', dataDir: data.dir, port: 0, longPollMs: 2000 }).listen();
  url = server.url;
});
after(async () => { await server.close(); await engine.close(); data.cleanup(); });

async function call(path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}/api/v1/${path}`, {
    method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

async function result(requestId: string, accept = 'application/json'): Promise<{ contentType: string; json: any; bytes: Uint8Array }> {
  for (;;) {
    const r = await fetch(`${url}/api/v1/retrieve_future`, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ request_id: requestId }) });
    const contentType = r.headers.get('content-type') ?? '';
    const bytes = new Uint8Array(await r.arrayBuffer());
    assert.equal(r.status, 200);
    if (contentType.includes('protobuf')) return { contentType, json: null, bytes };
    const json = JSON.parse(Buffer.from(bytes).toString());
    if (json.type !== 'try_again') return { contentType, json, bytes };
  }
}

async function trainingClient(rank = 4): Promise<{ session: string; model: string }> {
  const s = await call('create_session', { tags: [], user_metadata: {}, sdk_version: '0.25.0', type: 'create_session' });
  const m = await call('create_model', { session_id: s.json.session_id, model_seq_id: 0, base_model: 'stories', lora_config: { rank, seed: 1 }, type: 'create_model' });
  assert.equal(m.status, 200);
  const r = await result(m.json.request_id);
  assert.equal(r.json.model_id, `${s.json.session_id}:train:0`);
  return { session: s.json.session_id, model: r.json.model_id };
}

const PROMPT = [1, 403, 407, 261, 378];
const CONT = [400, 261, 279, 346];
function wireDatum(adv = 1) {
  const full = [...PROMPT, ...CONT], N = full.length - 1;
  const z = (f: (i: number) => number) => Array.from({ length: N }, (_, i) => (i >= PROMPT.length - 1 ? f(i) : 0));
  return {
    model_input: { chunks: [{ type: 'encoded_text', tokens: full.slice(0, N) }] },
    loss_fn_inputs: {
      target_tokens: { data: full.slice(1), dtype: 'int64', shape: [N] },
      logprobs: { data: z(() => -2), dtype: 'float32', shape: [N] },
      advantages: { data: z(() => adv), dtype: 'float32', shape: [N] },
    },
  };
}

test('the handshake turns off JWT and zstd, capabilities list the served model, and sessions take heartbeats', async () => {
  const c = await call('client/config', { sdk_version: '0.25.0' });
  assert.equal(c.json.pjwt_auth_enabled, false);
  assert.equal(c.json.proto_compress_fwdbwd, false);
  assert.deepEqual((await call('get_server_capabilities')).json, { supported_models: [{ model_name: 'stories', max_context_length: 512 }] });
  assert.deepEqual((await call('healthz')).json, { status: 'ok' });
  const s = await call('create_session', { tags: [], user_metadata: {}, sdk_version: '0.25.0', type: 'create_session' });
  assert.equal(s.json.type, 'create_session');
  assert.deepEqual((await call('session_heartbeat', { session_id: s.json.session_id, type: 'session_heartbeat' })).json, { type: 'session_heartbeat' });
  assert.equal((await call('session_heartbeat', { session_id: 'nope', type: 'session_heartbeat' })).status, 404);
  assert.deepEqual((await call('telemetry', { events: [] })).json, { status: 'accepted' });
});

test('forward_backward over JSON and over protobuf return the learner log-probs of every position, as the engine scores them', async () => {
  const { model } = await trainingClient();
  const scored = Array.from((await engine.score([{ promptIds: [PROMPT[0]], responseIds: [...PROMPT.slice(1), ...CONT] }], { adapter: 'current' }))[0]);
  const j = await call('forward', { model_id: model, seq_id: 1, forward_input: { loss_fn: 'ppo', data: [wireDatum()] } });
  const rj = await result(j.json.request_id);
  assert.equal(rj.json.loss_fn_output_type, 'ArrayRecord');
  rj.json.loss_fn_outputs[0].logprobs.data.forEach((x: number, i: number) => assert.ok(Math.abs(x - scored[i]) < 1e-5, `position ${i}`));
  assert.ok(Number.isFinite(rj.json.metrics['loss:sum']));
  const body = encodeForwardBackwardRequest({ model_id: model, seq_id: 2, forward_only: false, input: { loss_fn: 'ppo', data: [wireDatum() as never] } });
  const p = await fetch(`${url}/api/v1/forward_backward`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from(body) });
  assert.equal(p.status, 200);
  const rp = await result(((await p.json()) as { request_id: string }).request_id, 'application/x-protobuf');
  assert.equal(rp.contentType, 'application/x-protobuf');
  const out = decodeForwardBackwardOutput(rp.bytes);
  out.loss_fn_outputs[0].logprobs.data.forEach((x, i) => assert.ok(Math.abs(x - scored[i]) < 1e-5));
  // sum semantics: −Σ ratio·A over the 4 response positions (ratio = exp(lp + 2))
  const expected = -scored.slice(PROMPT.length - 1).reduce((a, lp) => a + Math.min(Math.exp(lp + 2), 1.2), 0);
  assert.ok(Math.abs(out.metrics['loss:sum'] - expected) < 1e-3, `${out.metrics['loss:sum']} vs ${expected}`);
  const opt = await call('optim_step', { model_id: model, seq_id: 3, adam_params: { learning_rate: 1e-3 }, type: 'optim_step' });
  const ro = await result(opt.json.request_id);
  assert.ok(ro.json.metrics['grad_norm:mean'] > 0);
});

test('a retried submit with the same seq_id gets the same request id; a different payload under it is a 409', async () => {
  const { model } = await trainingClient();
  const body = { model_id: model, seq_id: 1, forward_backward_input: { loss_fn: 'ppo', data: [wireDatum()] } };
  const a = await call('forward_backward', body);
  const b = await call('forward_backward', body);
  assert.equal(a.json.request_id, b.json.request_id);
  const c = await call('forward_backward', { ...body, forward_backward_input: { loss_fn: 'ppo', data: [wireDatum(-1)] } });
  assert.equal(c.status, 409);
  await result(a.json.request_id);
});

test('training requests run in seq_id order even when they arrive out of order', async () => {
  const { model } = await trainingClient();
  // optim_step (seq 2) arrives first; it must wait for forward_backward (seq 1), or its gradient would be empty
  const opt = await call('optim_step', { model_id: model, seq_id: 2, adam_params: { learning_rate: 1e-3 }, type: 'optim_step' });
  await new Promise((r) => setTimeout(r, 100));
  const fb = await call('forward_backward', { model_id: model, seq_id: 1, forward_backward_input: { loss_fn: 'importance_sampling', data: [wireDatum()] } });
  const ro = await result(opt.json.request_id);
  assert.ok(ro.json.metrics['grad_norm:mean'] > 0, 'the step saw the gradient of seq 1');
  await result(fb.json.request_id);
});

test('sampling clients: ephemeral snapshots, named checkpoints on disk loaded back by URI, exact ids and prompt log-probs', async () => {
  const { session, model } = await trainingClient();
  const snap = await call('save_weights_for_sampler', { model_id: model, seq_id: 1, sampling_session_seq_id: 7, type: 'save_weights_for_sampler' });
  const rs = await result(snap.json.request_id);
  assert.equal(rs.json.sampling_session_id, `${session}:sample:7`);
  const named = await call('save_weights_for_sampler', { model_id: model, seq_id: 2, path: 'final', type: 'save_weights_for_sampler' });
  const rn = await result(named.json.request_id);
  assert.equal(rn.json.path, `tinker://${model}/sampler_weights/final`);
  assert.ok(existsSync(join(data.dir, 'checkpoints', encodeURIComponent(model), 'sampler_weights', 'final', 'adapter_config.json')));
  const byPath = await call('create_sampling_session', { session_id: session, sampling_session_seq_id: 8, model_path: rn.json.path, type: 'create_sampling_session' });
  assert.equal(byPath.json.sampling_session_id, `${session}:sample:8`);
  const sample = await call('asample', {
    sampling_session_id: byPath.json.sampling_session_id, seq_id: 0, num_samples: 2, prompt: { chunks: [{ type: 'encoded_text', tokens: PROMPT }] },
    sampling_params: { max_tokens: 6, temperature: 0.8, seed: 5 }, prompt_logprobs: true, type: 'sample',
  });
  assert.deepEqual(sample.json.sample_sequence_ids, [`${sample.json.request_id}:0`, `${sample.json.request_id}:1`]);
  const r = decodeSampleResponse((await result(sample.json.request_id, 'application/x-protobuf')).bytes);
  assert.equal(r.sequences.length, 2);
  for (const s of r.sequences) assert.equal(s.tokens.length, s.logprobs!.length);
  assert.equal(r.prompt_logprobs![0], null);
  assert.equal(r.prompt_logprobs!.length, PROMPT.length);
  // the sampled ids and log-probs are the engine's own for the same seed and weights
  const v = (await engine.versions()).live.at(-1)!;
  const { collect } = await import('../../../src/engine/types.ts');
  const direct = await collect(engine.sample(PROMPT, { maxTokens: 6, temperature: 0.8, topP: 1, topK: 0, seed: 5, weights: v }));
  assert.deepEqual(r.sequences[0].tokens, direct.ids);
  r.sequences[0].logprobs!.forEach((x, i) => assert.ok(Math.abs(x - direct.logprobs[i]) < 1e-5));
  // training checkpoints: save, then load as the first request of a new training client
  const saved = await result((await call('save_weights', { model_id: model, path: 'step_0001', seq_id: 3, type: 'save_weights' })).json.request_id);
  assert.equal(saved.json.path, `tinker://${model}/weights/step_0001`);
  const dup = await result((await call('save_weights', { model_id: model, path: 'step_0001', seq_id: 4, type: 'save_weights' })).json.request_id);
  assert.equal(dup.json.category, 'user');
  const info = await call('weights_info', { tinker_path: saved.json.path });
  assert.equal(info.json.base_model, 'stories');
  const m2 = await result((await call('create_model', { session_id: session, model_seq_id: 1, base_model: 'stories', lora_config: { rank: 4 }, type: 'create_model' })).json.request_id);
  const load = await result((await call('load_weights', { model_id: m2.json.model_id, path: saved.json.path, seq_id: 1, optimizer: true, type: 'load_weights' })).json.request_id);
  assert.equal(load.json.type, 'load_weights');
  // the REST view lists the run's checkpoints by URI
  const listed = await call(`training_runs/${encodeURIComponent(model)}/checkpoints`);
  const paths = (listed.json.checkpoints as { tinker_path: string; checkpoint_type: string }[]).map((c) => `${c.checkpoint_type} ${c.tinker_path}`).sort();
  assert.deepEqual(paths, [`sampler tinker://${model}/sampler_weights/final`, `training tinker://${model}/weights/step_0001`]);
  const runs = await call('training_runs?limit=100');
  assert.ok(runs.json.training_runs.some((r: { training_run_id: string }) => r.training_run_id === model));
  assert.equal((await call('training_runs/nobody')).status, 404);
});

test('a long poll answers try_again while the result is pending', async () => {
  const quick = await new TinkerServer({ engine, modelName: 'stories', dataDir: data.dir, port: 0, longPollMs: 1 }).listen();
  try {
    const base = await fetch(`${quick.url}/api/v1/asample`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ base_model: 'stories', num_samples: 1, prompt: { chunks: [{ type: 'encoded_text', tokens: PROMPT }] }, sampling_params: { max_tokens: 200, temperature: 1, seed: 1 }, type: 'sample' }),
    });
    const { request_id } = await base.json() as { request_id: string };
    const r = await fetch(`${quick.url}/api/v1/retrieve_future`, { method: 'POST', body: JSON.stringify({ request_id }) });
    assert.deepEqual(await r.json(), { type: 'try_again', request_id, queue_state: 'active' });
  } finally { await quick.close(); }
});

test('bad requests get a 4xx with the reason, failed compute a {error, category}, and the server keeps serving', async () => {
  const { model } = await trainingClient();
  const bad = async (path: string, body: unknown, status = 400, pattern?: RegExp) => {
    const r = await call(path, body);
    assert.equal(r.status, status, JSON.stringify(r.json));
    if (pattern) assert.match(r.json.detail, pattern);
  };
  await bad('forward_backward', { model_id: model, seq_id: 1, forward_backward_input: { loss_fn: 'dro', data: [wireDatum()] } }, 400, /not supported/);
  const shifted = wireDatum();
  shifted.loss_fn_inputs.target_tokens.data[0] = 9;
  await bad('forward_backward', { model_id: model, seq_id: 1, forward_backward_input: { loss_fn: 'ppo', data: [shifted] } }, 400, /next-token/);
  const outside = wireDatum();
  outside.model_input.chunks[0].tokens[1] = 5000;
  outside.loss_fn_inputs.target_tokens.data[0] = 5000;
  await bad('forward_backward', { model_id: model, seq_id: 1, forward_backward_input: { loss_fn: 'ppo', data: [outside] } }, 400, /vocabulary/);
  await bad('forward_backward', { model_id: 'nobody:train:0', seq_id: 1, forward_backward_input: { loss_fn: 'ppo', data: [wireDatum()] } }, 404);
  await bad('optim_step', { model_id: model, seq_id: 1, adam_params: { learning_rate: -1 } }, 400, /learning_rate/);
  await bad('asample', { base_model: 'stories', prompt: { chunks: [{ type: 'image', data: '' }] } }, 400, /text only/);
  await bad('retrieve_future', { request_id: 'nope' }, 404);
  await bad('create_session', '{not json', 400, /JSON/);
  const proto = await fetch(`${url}/api/v1/forward_backward`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array([0x0a, 0x09, 0x01]) });
  assert.equal(proto.status, 400);
  // a prompt past the context is a failed future with category user
  const long = await call('asample', { base_model: 'stories', prompt: { chunks: [{ type: 'encoded_text', tokens: new Array(600).fill(5) }] }, sampling_params: { max_tokens: 4 }, type: 'sample' });
  const lr = await result(long.json.request_id);
  assert.equal(lr.json.category, 'user');
  assert.equal((await call('healthz')).status, 200);
});

test('with --api-key every route but healthz needs the key (X-API-Key or Bearer)', async () => {
  const locked = await new TinkerServer({ engine, modelName: 'stories', dataDir: data.dir, port: 0, apiKey: 'tml-secret' }).listen();
  try {
    const get = (h: Record<string, string>) => fetch(`${locked.url}/api/v1/get_server_capabilities`, { headers: h }).then((r) => r.status);
    assert.equal(await get({}), 401);
    assert.equal(await get({ 'x-api-key': 'tml-wrong' }), 401);
    assert.equal(await get({ 'x-api-key': 'tml-secret' }), 200);
    assert.equal(await get({ authorization: 'Bearer tml-secret' }), 200);
    assert.equal((await fetch(`${locked.url}/api/v1/healthz`)).status, 200);
  } finally { await locked.close(); }
});
