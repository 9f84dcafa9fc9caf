// TinkerEngine (src/engine/tinker/engine.ts, client.ts) against a TEST DOUBLE of an external Tinker
// server (test/helpers/tinker-double.ts, built from the wire notes): request body shapes, headers,
// retries with idempotency keys, futures, protobuf and JSON bodies, and the sampler hot swap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTinkerDouble, type TinkerDouble } from '../../helpers/tinker-double.ts';
import { TinkerEngine } from '../../../src/engine/tinker/engine.ts';
import { collect, EngineError, type Datum } from '../../../src/engine/types.ts';
import { STORIES } from '../../helpers/models.ts';

const FAST = { backoffMs: 5, maxBackoffMs: 20 };

async function withEngine(fn: (d: TinkerDouble, e: TinkerEngine) => Promise<void>, o: { wire?: 'proto' | 'json'; maxRetries?: number } = {}): Promise<void> {
  const d = await startTinkerDouble();
  const e = await TinkerEngine.connect({ baseUrl: d.url, apiKey: 'tml-test-key', tokenizerDir: STORIES, ...FAST, ...o });
  try { await fn(d, e); } finally { await e.close(); await d.close(); }
}

test('the handshake, session, capabilities and base sampler requests have the documented shapes and carry the API key', async () => {
  await withEngine(async (d, e) => {
    assert.deepEqual(d.requests.map((r) => `${r.method} ${r.path}`).slice(0, 4), [
      'POST /api/v1/client/config', 'POST /api/v1/create_session', 'GET /api/v1/get_server_capabilities', 'POST /api/v1/create_sampling_session',
    ]);
    assert.deepEqual(d.of('client/config')[0].body, { sdk_version: '0.25.0' });
    assert.deepEqual(d.of('create_session')[0].body, { tags: ['openclaw-rl'], user_metadata: {}, sdk_version: '0.25.0', type: 'create_session' });
    assert.deepEqual(d.of('create_sampling_session')[0].body, { session_id: 'sess-1', sampling_session_seq_id: 0, base_model: 'stories260k-hf', type: 'create_sampling_session' });
    for (const r of d.requests) assert.equal(r.headers['x-api-key'], 'tml-test-key');
    assert.equal(e.info.modelId, 'stories260k-hf');
    assert.equal(e.info.contextLength, 512);
  });
});

test('a sample sends the prompt ids and sampling params, and returns the exact ids and log-probs the server sampled', async () => {
  await withEngine(async (d, e) => {
    const prompt = e.tokenizer.encode('Once upon a time');
    const r = await collect(e.sample(prompt, { maxTokens: 8, temperature: 0.7, topP: 0.95, topK: 50, seed: 3 }));
    const body = d.of('asample')[0].body;
    assert.deepEqual(body, {
      sampling_session_id: 'sess-1:sample:0', seq_id: 0, num_samples: 1, prompt: { chunks: [{ type: 'encoded_text', tokens: prompt }] },
      sampling_params: { max_tokens: 8, temperature: 0.7, top_k: 50, top_p: 0.95, seed: 3, stop: [2, 1] }, prompt_logprobs: false, topk_prompt_logprobs: 0, type: 'sample',
    });
    assert.deepEqual(r.ids, [10, 11, 2]);
    assert.deepEqual(r.logprobs, [-0.5, -0.25, -0.125]);
    assert.equal(r.finishReason, 'stop');
    assert.equal(r.stoppedBy, 2);
    assert.equal(r.text, e.tokenizer.decode([10, 11]));
    // sampling seq ids count per sampling client; protobuf results were asked for
    await collect(e.sample(prompt, { maxTokens: 8, temperature: 1, topP: 1, topK: 0 }));
    assert.equal(d.of('asample')[1].body.seq_id, 1);
    assert.match(String(d.of('retrieve_future')[0].headers.accept), /application\/x-protobuf/);
  });
});

test('408, 429 and 5xx answers to a submit are retried with the same idempotency key; a 400 is not retried', async () => {
  await withEngine(async (d, e) => {
    const prompt = e.tokenizer.encode('One day');
    d.failures.set('/api/v1/asample', [503, 429, 408, 500]);
    const r = await collect(e.sample(prompt, { maxTokens: 4, temperature: 1, topP: 1, topK: 0 }));
    assert.deepEqual(r.ids, [10, 11, 2]);
    const attempts = d.of('asample');
    assert.equal(attempts.length, 5);
    const keys = new Set(attempts.map((a) => a.headers['x-idempotency-key']));
    assert.equal(keys.size, 1);
    assert.match(String([...keys][0]), /^openclaw-rl-retry-/);
    assert.deepEqual(attempts.map((a) => a.headers['x-stainless-retry-count'] ?? '0'), ['0', '1', '2', '3', '4']);
    // the next logical request gets a new key
    await collect(e.sample(prompt, { maxTokens: 4, temperature: 1, topP: 1, topK: 0 }));
    assert.notEqual(d.of('asample')[5].headers['x-idempotency-key'], [...keys][0]);
    d.failures.set('/api/v1/asample', [400]);
    await assert.rejects(collect(e.sample(prompt, { maxTokens: 4, temperature: 1, topP: 1, topK: 0 })), (err: EngineError) => err.code === 'bad_request');
    assert.equal(d.of('asample').length, 7);
  });
});

test('retries give up after maxRetries with an internal error', async () => {
  await withEngine(async (d, e) => {
    d.failures.set('/api/v1/asample', [500, 500, 500, 500]);
    await assert.rejects(collect(e.sample([1, 2], { maxTokens: 4, temperature: 1, topP: 1, topK: 0 })), (err: EngineError) => err.code === 'internal' && /HTTP 500/.test(err.message));
    assert.equal(d.of('asample').length, 3);
  }, { maxRetries: 2 });
});

test('futures: try_again, 408 and 5xx poll answers poll again; a failed future becomes a clear engine error', async () => {
  await withEngine(async (d, e) => {
    d.pollScript = ['try_again', 408, 502, 'try_again'];
    const r = await collect(e.sample([1, 2, 3], { maxTokens: 4, temperature: 1, topP: 1, topK: 0 }));
    assert.deepEqual(r.ids, [10, 11, 2]);
    assert.equal(d.of('retrieve_future').length, 5);
    assert.deepEqual(d.of('retrieve_future').map((x) => x.headers['x-tinker-request-iteration']), ['0', '1', '2', '3', '4']);
    d.pollScript = [];
    d.failFuture.set('sample', { error: 'prompt too long for this sampler', category: 'user' });
    await assert.rejects(collect(e.sample([1, 2, 3], { maxTokens: 4, temperature: 1, topP: 1, topK: 0 })), (err: EngineError) => err.code === 'bad_request' && /prompt too long/.test(err.message));
    d.failFuture.set('sample', { error: 'GPU fell over', category: 'server' });
    await assert.rejects(e.score([{ promptIds: [1, 2], responseIds: [3] }]), (err: EngineError) => err.code === 'internal');
  });
});

const datum = (): Datum => ({ promptIds: [1, 400, 401], responseIds: [402, 403], advantages: [1, -0.5], behaviourLogprobs: [-0.25, -0.75], lossMask: [1, 1] });

test('forward_backward goes out as protobuf with shifted targets, zeros on prompt positions and advantages scaled to a token mean; seq ids follow call order', async () => {
  await withEngine(async (d, e) => {
    await e.configureTraining({ rank: 8, seed: 4 });
    assert.deepEqual(d.of('create_model')[0].body, {
      session_id: 'sess-1', model_seq_id: 0, base_model: 'stories260k-hf',
      lora_config: { rank: 8, seed: 4, train_unembed: false, train_mlp: true, train_attn: true }, type: 'create_model',
    });
    const fb = await e.forwardBackward([datum(), datum()], { kind: 'ppo', clipLow: 0.2, clipHigh: 0.28 });
    const req = d.of('forward_backward')[0];
    assert.equal(req.proto, true);
    assert.equal(req.headers['content-type'], 'application/x-protobuf');
    assert.equal(req.body.model_id, 'sess-1:train:0');
    assert.equal(req.body.seq_id, 1);
    assert.equal(req.body.input.loss_fn, 'ppo');
    assert.ok(Math.abs(req.body.input.loss_fn_config.clip_low_threshold - 0.8) < 1e-12);
    assert.ok(Math.abs(req.body.input.loss_fn_config.clip_high_threshold - 1.28) < 1e-12);
    const inputs = req.body.input.data[0];
    assert.deepEqual(inputs.model_input.chunks[0].tokens, [1, 400, 401, 402]);
    assert.deepEqual(inputs.loss_fn_inputs.target_tokens.data, [400, 401, 402, 403]);
    assert.deepEqual(inputs.loss_fn_inputs.logprobs.data, [0, 0, -0.25, -0.75]);
    assert.deepEqual(inputs.loss_fn_inputs.advantages.data, [0, 0, 0.25, -0.125]); // ÷ 4 loss tokens in the call
    // the learner log-probs come back per response token; metrics from them by the loss formulas
    assert.deepEqual(fb.logprobs, [[-1, -1], [-1, -1]]);
    assert.equal(fb.tokens, 4);
    const opt = await e.optimStep({ learningRate: 1e-3 });
    assert.deepEqual(d.of('optim_step')[0].body, {
      model_id: 'sess-1:train:0', seq_id: 2, type: 'optim_step',
      adam_params: { learning_rate: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0, grad_clip_norm: 1 },
    });
    assert.equal(opt.gradNorm, 0.5);
    const v = await e.saveWeights();
    assert.equal(v, 1);
    assert.deepEqual(d.of('save_weights_for_sampler')[0].body, { model_id: 'sess-1:train:0', seq_id: 3, sampling_session_seq_id: 1, type: 'save_weights_for_sampler' });
  });
});

test('with --tinker-wire json, forward_backward is a JSON body and results are asked for as JSON', async () => {
  await withEngine(async (d, e) => {
    await e.configureTraining({ rank: 4 });
    await e.forwardBackward([{ ...datum(), temperature: 0.5 }], { kind: 'ppo' });
    const req = d.of('forward_backward')[0];
    assert.equal(req.proto, false);
    // the temperature extension goes only to servers that announce openclaw_rl_extensions (serve-tinker)
    assert.equal(req.body.forward_backward_input.loss_fn_config.temperature, undefined);
    assert.deepEqual(req.body.forward_backward_input.data[0].loss_fn_inputs.target_tokens, { data: [400, 401, 402, 403], dtype: 'int64', shape: [4] });
    assert.equal(String(d.of('retrieve_future').at(-1)!.headers.accept), 'application/json');
  }, { wire: 'json' });
});

test('teacher scoring asks for prompt log-probs over prompt + response and keeps the response part', async () => {
  await withEngine(async (d, e) => {
    const [lps] = await e.score([{ promptIds: [1, 400, 401], responseIds: [402, 403] }], { adapter: 'base' });
    const body = d.of('asample')[0].body;
    assert.deepEqual(body.prompt.chunks[0].tokens, [1, 400, 401, 402, 403]);
    assert.equal(body.prompt_logprobs, true);
    assert.deepEqual(body.sampling_params, { max_tokens: 1, temperature: 1 });
    assert.deepEqual(Array.from(lps), [-3 / 8, -4 / 8]);
  });
});

test('a published version is a new sampling client: requests in flight finish on theirs and none is refused during the swap', async () => {
  await withEngine(async (d, e) => {
    await e.configureTraining({ rank: 4 });
    d.holdSamples = true;
    const inFlight = collect(e.sample([1, 2, 3], { maxTokens: 4, temperature: 1, topP: 1, topK: 0 }));
    await new Promise((r) => setTimeout(r, 50));
    const v = await e.saveWeights();
    await e.publish(v);
    const after = collect(e.sample([1, 2, 3], { maxTokens: 4, temperature: 1, topP: 1, topK: 0 }));
    await new Promise((r) => setTimeout(r, 50));
    d.release();
    const [a, b] = await Promise.all([inFlight, after]);
    assert.equal(a.policyVersion, 0);
    assert.equal(b.policyVersion, v);
    assert.deepEqual(d.of('asample').map((r) => r.body.sampling_session_id), ['sess-1:sample:0', 'sess-1:sample:1']);
    assert.deepEqual((await e.versions()).published, v);
  });
});

test('checkpoints are tinker:// URIs recorded in trainer_state.json, and resuming loads them as a training client first request', async () => {
  const { tempDir } = await import('../../helpers/models.ts');
  const t = tempDir('ocrl-tinker-ckpt-');
  try {
    await withEngine(async (d, e) => {
      await e.configureTraining({ rank: 4 });
      await e.forwardBackward([datum()], { kind: 'ppo' });
      await e.optimStep({ learningRate: 1e-3 });
      await e.saveTrainingState(t.dir);
      const saved = d.of('save_weights')[0].body;
      assert.match(saved.path, /^openclaw-rl-step-1-\d+$/);
      const v = await e.loadTrainingState(t.dir);
      const load = d.of('load_weights')[0].body;
      assert.equal(load.seq_id, 1);
      assert.equal(load.optimizer, true);
      assert.equal(load.path, `tinker://sess-1:train:0/weights/${saved.path}`);
      assert.equal(load.model_id, 'sess-1:train:1');
      assert.equal(v, 1);
      assert.equal((await e.versions()).optimizerStep, 1);
    });
  } finally { t.cleanup(); }
});

test('--tinker-loss importance_sampling sends the PPO objective unclipped, for servers without ppo', async () => {
  const d = await startTinkerDouble();
  const e = await TinkerEngine.connect({ baseUrl: d.url, tokenizerDir: STORIES, ...FAST, ppoAs: 'importance_sampling', wire: 'json' });
  try {
    await e.configureTraining({ rank: 4 });
    const fb = await e.forwardBackward([datum()], { kind: 'ppo' });
    const input = d.of('forward_backward')[0].body.forward_backward_input;
    assert.equal(input.loss_fn, 'importance_sampling');
    assert.equal(input.loss_fn_config, undefined);
    assert.equal(fb.clipFraction, 0);
  } finally { await e.close(); await d.close(); }
});
