// --engine vllm and --engine sglang (src/engine/serving.ts, vllm/backend.ts, sglang/backend.ts)
// against TEST DOUBLES of those servers (test/helpers/serving-doubles.ts: their documented wire
// formats, with the real stories260K engine behind them): streaming passes through, exact ids and
// log-probs are recorded, versions are PEFT adapters loaded under new names, and no request is
// refused during a swap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServingDouble, type ServingDouble } from '../helpers/serving-doubles.ts';
import { ServingEngine, type ServingBackend } from '../../src/engine/serving.ts';
import { VllmBackend } from '../../src/engine/vllm/backend.ts';
import { SglangBackend } from '../../src/engine/sglang/backend.ts';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { collect, type SampleEvent } from '../../src/engine/types.ts';
import { Store } from '../../src/store/store.ts';
import { startServer } from '../../src/api/server.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { stopProcess } from '../helpers/processes.ts';

async function setup(kind: 'vllm' | 'sglang'): Promise<{ d: ServingDouble; e: ServingEngine; close(): Promise<void> }> {
  const d = await startServingDouble(kind);
  const backend: ServingBackend = kind === 'vllm' ? await VllmBackend.connect({ baseUrl: `${d.url}/v1` }) : await SglangBackend.connect({ baseUrl: d.url });
  const trainer = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const t = tempDir('ocrl-serving-');
  const e = new ServingEngine(backend, trainer, { adapterDir: t.dir });
  return { d, e, close: async () => { await e.close(); await d.close(); t.cleanup(); } };
}

const PARAMS = { maxTokens: 20, temperature: 0.8, topP: 1, topK: 0, seed: 11 };

for (const kind of ['vllm', 'sglang'] as const) {
  test(`${kind}: tokens stream through one by one, with the exact ids and log-probs the server sampled`, { timeout: 180_000 }, async () => {
    const { d, e, close } = await setup(kind);
    try {
      d.tokenDelayMs = 20;
      const prompt = e.tokenizer.encode('Once upon a time');
      const direct = await collect(d.engine.sample(prompt, { ...PARAMS, weights: 'base' }));
      const arrivals: number[] = [];
      let result = null;
      for await (const ev of e.sample(prompt, PARAMS) as AsyncIterable<SampleEvent>) {
        if (ev.type === 'token') arrivals.push(performance.now()); else result = ev.result;
      }
      assert.deepEqual(result!.ids, direct.ids);
      result!.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - direct.logprobs[i]) < 1e-6));
      assert.equal(result!.text, direct.text);
      assert.equal(result!.policyVersion, 0);
      // streamed, not delivered at the end: the first token arrived well before the last
      assert.ok(arrivals.at(-1)! - arrivals[0] > 5 * d.tokenDelayMs, `arrivals spread over ${arrivals.at(-1)! - arrivals[0]} ms`);
      const body = d.requests.find((r) => r.path.endsWith(kind === 'vllm' ? '/v1/completions' : '/generate'))!.body;
      if (kind === 'vllm') {
        assert.deepEqual(body.prompt, prompt);
        assert.equal(body.return_token_ids, true);
        assert.equal(body.return_tokens_as_token_ids, true);
        assert.equal(body.stream, true);
        assert.equal(body.model, 'stories-base');
        assert.equal(body.seed, 11);
      } else {
        assert.deepEqual(body.input_ids, prompt);
        assert.equal(body.return_logprob, true);
        assert.equal(body.stream, true);
        assert.equal(body.lora_path, undefined);
        assert.equal(body.sampling_params.max_new_tokens, 20);
      }
      // the other id spellings: vLLM "token_id:N" strings without token_ids; SGLang incremental chunks
      if (kind === 'vllm') d.omitTokenIds = true; else d.incremental = true;
      const again = await collect(e.sample(prompt, PARAMS));
      assert.deepEqual(again.ids, direct.ids);
    } finally { await close(); }
  });

  test(`${kind}: each version is a PEFT adapter loaded under a new name; requests switch, the old one is unloaded after its requests finish, none is refused`, { timeout: 300_000 }, async () => {
    const { d, e, close } = await setup(kind);
    try {
      const prompt = e.tokenizer.encode('One day');
      await e.configureTraining({ rank: 4, seed: 2 });
      const ref = await collect(e.sample(prompt, PARAMS));
      const datum = { promptIds: prompt, responseIds: ref.ids, advantages: ref.ids.map(() => 1), behaviourLogprobs: ref.logprobs };
      const step = async () => { await e.forwardBackward([datum], { kind: 'ppo' }); await e.optimStep({ learningRate: 1e-2 }); return e.saveWeights(); };
      const v1 = await step();
      assert.deepEqual(d.loads, ['policy-v1']);
      await e.publish(v1);
      // a long request on v1 stays in flight while v2 is trained, loaded and published
      // (it runs until aborted below, however slow the machine is)
      d.tokenDelayMs = 15;
      const hold = new AbortController();
      const slow = collect(e.sample(prompt, { ...PARAMS, maxTokens: 400, ignoreEos: true, seed: 1 }, hold.signal));
      await new Promise((r) => setTimeout(r, 60));
      const v2 = await step();
      await e.publish(v2);
      assert.deepEqual(d.loads, ['policy-v1', 'policy-v2']);
      assert.ok(d.adapters.has('policy-v1'), 'v1 stays loaded while a request uses it');
      const fresh = await collect(e.sample(prompt, { ...PARAMS, maxTokens: 4 }));
      assert.equal(fresh.policyVersion, v2);
      hold.abort();
      const old = await slow;
      // the server double finishes the abandoned generation quickly, before the engines close
      d.tokenDelayMs = 0;
      for (let i = 0; i < 600 && d.inflight > 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(old.policyVersion, v1);
      assert.ok(old.ids.length > 0);
      // unloading follows the end of its last request (asynchronously: the engine forgets v1 once the server has answered the unload)
      for (let i = 0; i < 100 && (d.unloads.length === 0 || v1 in e.loadedAdapters()); i++) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(d.unloads, ['policy-v1']);
      assert.deepEqual([...d.adapters.keys()], ['policy-v2']);
      assert.deepEqual(e.loadedAdapters(), { [v2]: 'policy-v2' });
      // the adapter the server samples with is the one the trainer trained: same log-probs
      const [served] = await e.score([{ promptIds: prompt, responseIds: ref.ids }]);
      const [trained] = await e.trainer.score([{ promptIds: prompt, responseIds: ref.ids }], { adapter: v2 });
      served.forEach((lp, i) => assert.ok(Math.abs(lp - trained[i]) < 1e-5, `token ${i}: ${lp} vs ${trained[i]}`));
      const req = d.requests.filter((r) => r.path.endsWith(kind === 'vllm' ? 'load_lora_adapter' : 'load_lora_adapter') && !r.path.includes('unload'));
      assert.match(req[1].body.lora_path, /policy-v2$/);
    } finally { await close(); }
  });

  test(`${kind}: teacher scoring uses prompt log-probs and equals the trainer's own scores; base and published weights`, { timeout: 180_000 }, async () => {
    const { d, e, close } = await setup(kind);
    try {
      const prompt = e.tokenizer.encode('There was a boy');
      const resp = (await collect(e.sample(prompt, PARAMS))).ids;
      const [viaServer] = await e.score([{ promptIds: prompt, responseIds: resp }], { adapter: 'base' });
      const [local] = await e.trainer.score([{ promptIds: prompt, responseIds: resp }], { adapter: 'base' });
      assert.equal(viaServer.length, resp.length);
      viaServer.forEach((lp, i) => assert.ok(Math.abs(lp - local[i]) < 1e-5));
      const scoring = d.requests.filter((r) => (kind === 'vllm' ? r.body?.prompt_logprobs !== undefined : r.body?.sampling_params?.max_new_tokens === 0));
      assert.equal(scoring.length, 1);
      if (kind === 'sglang') assert.equal(scoring[0].body.logprob_start_len, prompt.length);
      // a temperature other than 1 is scored by the trainer (exact), not the server
      await e.score([{ promptIds: prompt, responseIds: resp }], { adapter: 'base', temperature: 0.7 });
      assert.equal(d.requests.filter((r) => (kind === 'vllm' ? r.body?.prompt_logprobs !== undefined : r.body?.sampling_params?.max_new_tokens === 0)).length, 1);
    } finally { await close(); }
  });

  test(`${kind}: behind the OpenAI API, a streamed chat turn is recorded with the server's exact ids and log-probs`, { timeout: 180_000 }, async () => {
    const { d, e, close } = await setup(kind);
    const t = tempDir('ocrl-serving-api-');
    const store = new Store(t.dir);
    const server = await startServer({ engine: e, store, modelId: 'stories', port: 0 });
    try {
      const r = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-session-id': 's1' },
        body: JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, temperature: 1, seed: 5, stream: true }),
      });
      assert.equal(r.status, 200);
      const text = await r.text();
      const chunks = text.split('\n\n').filter((l) => l.startsWith('data: {')).length;
      assert.ok(chunks >= 3, `${chunks} SSE chunks`);
      const turn = store.db.prepare('SELECT prompt_ids, response_ids, response_logprobs FROM turns').get() as { prompt_ids: string; response_ids: string; response_logprobs: string };
      const promptIds = JSON.parse(turn.prompt_ids) as number[];
      const direct = await collect(d.engine.sample(promptIds, { maxTokens: 12, temperature: 1, topP: 1, topK: 0, seed: 5, weights: 'base' }));
      assert.deepEqual(JSON.parse(turn.response_ids), direct.ids);
      (JSON.parse(turn.response_logprobs) as number[]).forEach((lp, i) => assert.ok(Math.abs(lp - direct.logprobs[i]) < 1e-6));
    } finally { await server.close(); store.close(); t.cleanup(); await close(); }
  });
}

test('an adapter name the server does not know is a clear bad_request, and a failed load leaves the version unserved', { timeout: 180_000 }, async () => {
  const { d, e, close } = await setup('vllm');
  try {
    await assert.rejects(collect(e.sample([1, 2, 3], { ...PARAMS, weights: 5 })), /not loaded/);
    await e.configureTraining({ rank: 4 });
    d.adapters.set('policy-v1', 0); // the name is taken on the server: the load fails
    await assert.rejects(e.saveWeights(), /already been loaded/);
    await assert.rejects(e.publish(1), /not loaded/);
  } finally { await close(); }
});

test('CLI: serve --engine vllm streams a chat turn from the vLLM server and says which engine it serves on', { timeout: 300_000 }, async () => {
  const { spawn } = await import('node:child_process');
  const d = await startServingDouble('vllm');
  const t = tempDir('ocrl-serving-cli-');
  const proc = spawn(process.execPath, ['bin/openclaw-rl.js', 'serve', '--engine', 'vllm', '--serving-url', `${d.url}/v1`, '--model', STORIES, '--port', '0',
    '--data-dir', t.dir, '--served-model-name', 'stories', '--threads', '1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    let log = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(log)), 150_000);
      proc.stderr!.on('data', (c: Buffer) => { log += c; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) { clearTimeout(timer); resolve(m[1]); } });
      proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${log}`)); });
    });
    assert.match(log, /\(llama, vllm/);
    const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8 }) });
    assert.equal(r.status, 200);
    const j = await r.json() as { choices: { message: { content: string } }[] };
    assert.ok(j.choices[0].message.content.length > 0);
    assert.ok(d.requests.some((q) => q.path === '/v1/completions' && q.body.stream === true));
  } finally {
    await stopProcess(proc, 'SIGTERM');
    await d.close(); t.cleanup();
  }
});
