// Wire fixtures (test/fixtures/wire/, written by hand from the documented formats) replayed to the
// Tinker, vLLM and SGLang clients by a replay server that answers each route with the fixture's
// bytes: what the clients parse, and how the Tinker server side reads the documented request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { VllmBackend } from '../../src/engine/vllm/backend.ts';
import { SglangBackend } from '../../src/engine/sglang/backend.ts';
import { TinkerHttp } from '../../src/engine/tinker/client.ts';
import { fromWireDatum, lossFromWire, type WireDatum } from '../../src/engine/tinker/wire.ts';
import type { BackendEvent } from '../../src/engine/serving.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/wire/', import.meta.url));
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

/** Answers path → successive bodies (the last one repeats); records request bodies. */
async function replay(routes: Record<string, { type: string; bodies: string[] }>) {
  const seen: { path: string; body: any }[] = [];
  const count = new Map<string, number>();
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    const path = new URL(req.url!, 'http://x').pathname;
    seen.push({ path, body: raw ? JSON.parse(raw) : null });
    const r = routes[path];
    if (!r) { res.writeHead(404); res.end(); return; }
    const n = count.get(path) ?? 0;
    count.set(path, n + 1);
    res.writeHead(200, { 'content-type': r.type });
    res.end(r.bodies[Math.min(n, r.bodies.length - 1)]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function drain(events: AsyncIterable<BackendEvent>) {
  const ids: number[] = [], lps: number[] = [];
  let finish = null;
  for await (const e of events) { if (e.type === 'token') { ids.push(e.id); lps.push(e.logprob); } else finish = e.reason; }
  return { ids, lps, finish };
}

const PARAMS = { maxTokens: 8, temperature: 1, topP: 1, topK: 0 };

test('vLLM fixtures: a streamed completion (token_ids in some chunks, "token_id:N" only in others) and prompt log-probs', async () => {
  const s = await replay({ '/v1/completions': { type: 'text/event-stream', bodies: [fixture('vllm-completions-stream.txt'), fixture('vllm-completions.json')] } });
  try {
    const b = await VllmBackend.connect({ baseUrl: `${s.url}/v1`, baseModel: 'Qwen/Qwen3-4B' });
    assert.deepEqual(await drain(b.generate([151644, 872, 198], PARAMS, 'policy-v17')), { ids: [279, 835, 151645], lps: [-0.25, -1.5, -0.01], finish: 'stop' });
    assert.equal(s.seen[0].body.model, 'policy-v17');
    assert.deepEqual(s.seen[0].body.prompt, [151644, 872, 198]);
    // prompt log-probs: each position's entry for the actual token (not the top alternative)
    assert.deepEqual(await b.promptLogprobs([151644, 872, 198], 1, null), [-3.5, -0.05]);
    assert.equal(s.seen[1].body.model, 'Qwen/Qwen3-4B');
    assert.equal(s.seen[1].body.prompt_logprobs, 1);
  } finally { await s.close(); }
});

test('SGLang fixtures: a streamed /generate with cumulative log-probs, and input log-probs from logprob_start_len', async () => {
  const s = await replay({ '/generate': { type: 'text/event-stream', bodies: [fixture('sglang-generate-stream.txt'), fixture('sglang-generate.json')] } });
  try {
    const b = await SglangBackend.connect({ baseUrl: s.url, baseModel: 'Qwen/Qwen3-4B' });
    assert.deepEqual(await drain(b.generate([151644, 872, 198], PARAMS, 'policy-v17')), { ids: [279, 835, 151645], lps: [-0.25, -1.5, -0.01], finish: 'stop' });
    assert.equal(s.seen[0].body.lora_path, 'policy-v17');
    assert.equal(s.seen[0].body.return_logprob, true);
    assert.deepEqual(await b.promptLogprobs([151644, 872, 198, 9707, 0], 3, null), [-2.5, -0.75]);
    assert.equal(s.seen[1].body.logprob_start_len, 3);
    assert.equal(s.seen[1].body.sampling_params.max_new_tokens, 0);
  } finally { await s.close(); }
});

test('Tinker fixtures: retrieve_future polls past try_again and parses the documented sample result', async () => {
  const [tryAgain, sample] = JSON.parse(fixture('tinker-retrieve.json'));
  const s = await replay({ '/api/v1/retrieve_future': { type: 'application/json', bodies: [JSON.stringify(tryAgain), JSON.stringify(sample)] } });
  try {
    const http = new TinkerHttp({ baseUrl: s.url, wire: 'json' });
    const r = await http.retrieve('1042', 'sample') as { sequences: { tokens: number[]; logprobs: number[] }[]; prompt_logprobs: (number | null)[] };
    assert.deepEqual(r.sequences[0].tokens, [40, 1079, 151645]);
    assert.deepEqual(r.prompt_logprobs, [null, -7.2, -0.3, -2.9]);
    assert.equal(s.seen.length, 2);
    assert.deepEqual(s.seen[0].body, { request_id: '1042', allow_metadata_only: false });
  } finally { await s.close(); }
});

test('Tinker fixture: the documented forward_backward request becomes the datum the engine trains (prompt positions masked, clip bounds as distances)', () => {
  const body = JSON.parse(fixture('tinker-forward-backward.json'));
  const loss = lossFromWire(body.forward_backward_input.loss_fn, body.forward_backward_input.loss_fn_config);
  assert.equal(loss.spec.kind, 'ppo');
  assert.ok(Math.abs((loss.spec as { clipLow: number }).clipLow - 0.2) < 1e-12);
  assert.ok(Math.abs((loss.spec as { clipHigh: number }).clipHigh - 0.28) < 1e-12);
  const d = fromWireDatum(body.forward_backward_input.data[0] as WireDatum, loss);
  assert.deepEqual(d.promptIds, [151644]);
  assert.deepEqual(d.responseIds, [872, 198, 9707, 0, 151645]);
  assert.deepEqual(d.advantages, [0, 0, 0, 1, 1]);
  assert.deepEqual(d.lossMask, [0, 0, 0, 1, 1]);
  assert.deepEqual(d.behaviourLogprobs, [0, 0, 0, -0.41, -0.02]);
});
