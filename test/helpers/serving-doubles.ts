// TEST DOUBLES of external serving engines — a vLLM OpenAI-compatible server and an SGLang native
// server — built from their documented wire formats (routes, request fields, streamed chunk shapes,
// runtime LoRA loading by name). Behind them runs the real stories260K embedded engine, so the
// tokens and log-probs they stream are real and the PEFT adapter folders the project writes are
// really loaded. They record every request, can slow each streamed token down (to hold requests in
// flight across a weights swap), and refuse unknown adapter names as the real servers do.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import type { SampleParams, SampledToken, SampleResult } from '../../src/engine/types.ts';
import { STORIES } from './models.ts';

export interface ServingDouble {
  kind: 'vllm' | 'sglang';
  url: string;
  engine: EmbeddedEngine;
  requests: { path: string; body: any }[];
  /** adapter name → engine version, as loaded now */
  adapters: Map<string, number>;
  /** names in load / unload order */
  loads: string[];
  unloads: string[];
  tokenDelayMs: number;
  /** vLLM: leave token_ids out of streamed chunks (ids then come from "token_id:N" strings) */
  omitTokenIds: boolean;
  /** SGLang: stream only the new log-probs in each chunk instead of all so far */
  incremental: boolean;
  inflight: number;
  close(): Promise<void>;
}

const BASE = 'stories-base';

export async function startServingDouble(kind: 'vllm' | 'sglang'): Promise<ServingDouble> {
  const engine = await EmbeddedEngine.load(STORIES, { threads: 1 });
  const d: ServingDouble = {
    kind, url: '', engine, requests: [], adapters: new Map(), loads: [], unloads: [], tokenDelayMs: 0, omitTokenIds: false, incremental: false, inflight: 0,
    close: async () => { await new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }); await engine.close(); },
  };
  const json = (res: ServerResponse, status: number, v: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(v)); };
  const sse = (res: ServerResponse, v: unknown) => res.write(`data: ${JSON.stringify(v)}\n\n`);

  async function run(prompt: number[], params: SampleParams, onToken: (t: SampledToken) => void): Promise<SampleResult> {
    d.inflight++;
    try {
      let result: SampleResult | null = null;
      for await (const ev of engine.sample(prompt, params)) {
        if (ev.type === 'token') { onToken(ev.token); if (d.tokenDelayMs) await new Promise((r) => setTimeout(r, d.tokenDelayMs)); }
        else result = ev.result;
      }
      return result!;
    } finally { d.inflight--; }
  }

  async function loadAdapter(name: string, path: string): Promise<string | null> {
    if (d.adapters.has(name)) return `The lora adapter '${name}' has already been loaded.`;
    try { d.adapters.set(name, await engine.loadAdapter(path)); } catch (e) { return (e as Error).message; }
    d.loads.push(name);
    return null;
  }

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : null;
    const path = new URL(req.url!, 'http://x').pathname;
    d.requests.push({ path, body });
    const vllmError = (status: number, message: string) => json(res, status, { error: { message, type: status === 404 ? 'NotFoundError' : 'BadRequestError', param: null, code: status } });

    if (kind === 'vllm') {
      if (path === '/v1/models') return json(res, 200, { object: 'list', data: [{ id: BASE, object: 'model', parent: null }, ...[...d.adapters.keys()].map((id) => ({ id, object: 'model', parent: BASE }))] });
      if (path === '/v1/load_lora_adapter') {
        const err = await loadAdapter(body.lora_name, body.lora_path);
        if (err) return vllmError(400, err);
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`Success: LoRA adapter '${body.lora_name}' added successfully.`);
      }
      if (path === '/v1/unload_lora_adapter') {
        if (!d.adapters.delete(body.lora_name)) return vllmError(404, `The lora adapter '${body.lora_name}' cannot be found.`);
        d.unloads.push(body.lora_name);
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`Success: LoRA adapter '${body.lora_name}' removed successfully.`);
      }
      if (path === '/v1/completions') {
        const version = body.model === BASE ? 'base' : d.adapters.get(body.model);
        if (version === undefined) return vllmError(404, `The model \`${body.model}\` does not exist.`);
        const params: SampleParams = {
          maxTokens: body.max_tokens, temperature: body.temperature, topP: body.top_p ?? 1, topK: body.top_k > 0 ? body.top_k : 0, seed: body.seed,
          stop: body.stop, stopTokenIds: body.stop_token_ids, ignoreEos: body.ignore_eos, topLogprobs: body.logprobs, weights: version,
        };
        const lpEntry = (t: SampledToken) => ({
          tokens: [`token_id:${t.id}`], token_logprobs: [t.logprob],
          top_logprobs: [Object.fromEntries((t.top ?? []).map((a) => [`token_id:${a.id}`, a.logprob]))], text_offset: [0],
        });
        if (body.stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const r = await run(body.prompt, params, (t) => sse(res, {
            id: 'cmpl-double', object: 'text_completion', model: body.model,
            choices: [{ index: 0, text: t.text, ...(d.omitTokenIds ? {} : { token_ids: [t.id] }), logprobs: lpEntry(t), finish_reason: null }],
          }));
          sse(res, { id: 'cmpl-double', object: 'text_completion', model: body.model, choices: [{ index: 0, text: '', logprobs: { tokens: [], token_logprobs: [] }, finish_reason: r.finishReason === 'length' ? 'length' : 'stop' }] });
          res.write('data: [DONE]\n\n');
          return res.end();
        }
        const ids: number[] = [], lps: number[] = [];
        const r = await run(body.prompt, params, (t) => { ids.push(t.id); lps.push(t.logprob); });
        let promptLogprobs: unknown = null;
        if (body.prompt_logprobs !== undefined && body.prompt_logprobs !== null) {
          const [s] = await engine.score([{ promptIds: [body.prompt[0]], responseIds: body.prompt.slice(1) }], { adapter: version === 'base' ? 'base' : version });
          promptLogprobs = [null, ...Array.from(s).map((lp, i) => ({ [String(body.prompt[i + 1])]: { logprob: lp, rank: 1, decoded_token: '' } }))];
        }
        return json(res, 200, {
          id: 'cmpl-double', object: 'text_completion', model: body.model,
          choices: [{ index: 0, text: r.text, token_ids: ids, prompt_token_ids: body.prompt, logprobs: { tokens: ids.map((i) => `token_id:${i}`), token_logprobs: lps }, prompt_logprobs: promptLogprobs, finish_reason: r.finishReason }],
        });
      }
      return vllmError(404, `no route ${path}`);
    }

    // SGLang
    if (path === '/get_model_info') return json(res, 200, { model_path: BASE, is_generation: true });
    if (path === '/load_lora_adapter') {
      const err = await loadAdapter(body.lora_name, body.lora_path);
      return json(res, 200, { success: !err, error_message: err, loaded_adapters: Object.fromEntries([...d.adapters.keys()].map((n) => [n, { lora_name: n }])) });
    }
    if (path === '/unload_lora_adapter') {
      const ok = d.adapters.delete(body.lora_name);
      if (ok) d.unloads.push(body.lora_name);
      return json(res, 200, { success: ok, error_message: ok ? null : `adapter ${body.lora_name} is not loaded` });
    }
    if (path === '/generate') {
      const version = body.lora_path === undefined || body.lora_path === null ? 'base' : d.adapters.get(body.lora_path);
      if (version === undefined) return json(res, 400, { error: { message: `LoRA adapter ${body.lora_path} is not loaded` } });
      const sp = body.sampling_params ?? {};
      if (sp.max_new_tokens === 0) {
        const from = body.logprob_start_len;
        const ids: number[] = body.input_ids;
        const [s] = await engine.score([{ promptIds: [ids[0]], responseIds: ids.slice(1) }], { adapter: version === 'base' ? 'base' : version });
        const all: [number | null, number, null][] = [[null, ids[0], null], ...Array.from(s).map((lp, i) => [lp, ids[i + 1], null] as [number, number, null])];
        return json(res, 200, { text: '', meta_info: { prompt_tokens: ids.length, completion_tokens: 0, input_token_logprobs: all.slice(from), output_token_logprobs: [], finish_reason: { type: 'length' } } });
      }
      const params: SampleParams = {
        maxTokens: sp.max_new_tokens, temperature: sp.temperature, topP: sp.top_p ?? 1, topK: sp.top_k > 0 ? sp.top_k : 0, seed: sp.sampling_seed,
        stop: sp.stop, stopTokenIds: sp.stop_token_ids, ignoreEos: sp.ignore_eos, topLogprobs: body.top_logprobs_num, weights: version,
      };
      const out: [number, number, null][] = [];
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let text = '';
        const r = await run(body.input_ids, params, (t) => {
          out.push([t.logprob, t.id, null]);
          text += t.text;
          sse(res, { text, meta_info: { prompt_tokens: body.input_ids.length, completion_tokens: out.length, output_token_logprobs: d.incremental ? out.slice(-1) : out, finish_reason: null } });
        });
        sse(res, { text, meta_info: { prompt_tokens: body.input_ids.length, completion_tokens: out.length, output_token_logprobs: d.incremental ? [] : out, finish_reason: { type: r.finishReason === 'length' ? 'length' : 'stop' } } });
        res.write('data: [DONE]\n\n');
        return res.end();
      }
      const r = await run(body.input_ids, params, (t) => out.push([t.logprob, t.id, null]));
      return json(res, 200, { text: r.text, meta_info: { prompt_tokens: body.input_ids.length, completion_tokens: out.length, output_token_logprobs: out, finish_reason: { type: r.finishReason } } });
    }
    return json(res, 404, { error: { message: `no route ${path}` } });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  d.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return d;
}
