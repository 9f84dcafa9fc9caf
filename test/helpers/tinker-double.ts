// TEST DOUBLE of an external Tinker API server (Tinker cloud / SkyRL), built from the wire notes
// (/api/v1 routes, futures, JSON shapes, protobuf results). It records every request and can be
// scripted to fail: HTTP statuses before a route succeeds, try_again / 408 answers before a future
// resolves, failed futures, and results held back until released. It computes nothing: sampled
// tokens and log-probs are fixed values the tests check for.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeSampleResponse, encodeForwardBackwardOutput, decodeForwardBackwardRequest } from '../../src/engine/tinker/proto.ts';
import type { SampleResult, ForwardBackwardResult, WireDatum } from '../../src/engine/tinker/wire.ts';

export interface RecordedRequest { method: string; path: string; headers: IncomingMessage['headers']; body: any; proto: boolean }

export interface TinkerDouble {
  url: string;
  requests: RecordedRequest[];
  /** statuses answered (in order) before the route answers normally */
  failures: Map<string, number[]>;
  /** answers retrieve_future gives (in order, per request) before the result: 'try_again' | 408 | 500 | 429 */
  pollScript: (string | number)[];
  /** kind → a failure to report instead of the result */
  failFuture: Map<string, { error: string; category: string }>;
  /** while set, sample futures stay pending until release() */
  holdSamples: boolean;
  release(): void;
  /** the sampled answer every asample gives */
  sampleTokens: number[];
  sampleLogprobs: number[];
  of(path: string): RecordedRequest[];
  close(): Promise<void>;
}

export async function startTinkerDouble(o: { modelName?: string; contextLength?: number } = {}): Promise<TinkerDouble> {
  const modelName = o.modelName ?? 'stories260k-hf';
  const futures = new Map<string, { kind: string; result: () => unknown; polls: number }>();
  let nextFuture = 1, nextModel = 0;
  let waiting: (() => void)[] = [];
  const d: TinkerDouble = {
    url: '', requests: [], failures: new Map(), pollScript: [], failFuture: new Map(), holdSamples: false,
    release: () => { d.holdSamples = false; for (const w of waiting.splice(0)) w(); },
    sampleTokens: [10, 11, 2], sampleLogprobs: [-0.5, -0.25, -0.125],
    of: (path) => d.requests.filter((r) => r.path === `/api/v1/${path}`),
    close: async () => { await new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }); },
  };
  const future = (kind: string, result: () => unknown, extra: object = {}) => {
    const id = String(nextFuture++);
    futures.set(id, { kind, result, polls: 0 });
    return { request_id: id, ...extra };
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const proto = String(req.headers['content-type']).includes('application/x-protobuf');
    const path = new URL(req.url!, 'http://x').pathname;
    const body = proto ? decodeForwardBackwardRequest(new Uint8Array(raw)) : raw.length ? JSON.parse(raw.toString()) : null;
    d.requests.push({ method: req.method!, path, headers: req.headers, body, proto });
    const json = (status: number, v: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(v)); };
    const fail = d.failures.get(path);
    if (fail && fail.length > 0) return json(fail.shift()!, { detail: 'scripted failure' });
    switch (path) {
      case '/api/v1/client/config': return json(200, { pjwt_auth_enabled: false });
      case '/api/v1/create_session': return json(200, { type: 'create_session', session_id: 'sess-1' });
      case '/api/v1/session_heartbeat': return json(200, { type: 'session_heartbeat' });
      case '/api/v1/get_server_capabilities': return json(200, { supported_models: [{ model_name: modelName, max_context_length: o.contextLength ?? 512 }] });
      case '/api/v1/create_sampling_session': return json(200, { type: 'create_sampling_session', sampling_session_id: `sess-1:sample:${body.sampling_session_seq_id}` });
      case '/api/v1/create_model': { const id = `sess-1:train:${nextModel++}`; return json(200, future('create_model', () => ({ model_id: id, type: 'create_model' }), { model_id: id })); }
      case '/api/v1/forward_backward': {
        const input = proto ? body.input : body.forward_backward_input;
        return json(200, future('forward_backward', (): ForwardBackwardResult => ({
          loss_fn_output_type: 'ArrayRecord',
          loss_fn_outputs: input.data.map((x: WireDatum) => ({ logprobs: { data: x.loss_fn_inputs.target_tokens.data.map(() => -1), dtype: 'float32', shape: [x.loss_fn_inputs.target_tokens.data.length] } })),
          metrics: { 'loss:sum': 0 },
        })));
      }
      case '/api/v1/optim_step': return json(200, future('optim_step', () => ({ type: 'optim_step', metrics: { 'grad_norm:mean': 0.5 } })));
      case '/api/v1/save_weights_for_sampler': return json(200, future('save_weights_for_sampler', () => ({ path: null, sampling_session_id: `sess-1:sample:${body.sampling_session_seq_id}`, type: 'save_weights_for_sampler' })));
      case '/api/v1/save_weights': return json(200, future('save_weights', () => ({ path: `tinker://${body.model_id}/weights/${body.path}`, type: 'save_weights' })));
      case '/api/v1/load_weights': return json(200, future('load_weights', () => ({ path: body.path, model_id: body.model_id, type: 'load_weights' })));
      case '/api/v1/asample': {
        const n = body.prompt.chunks[0].tokens.length;
        return json(200, future('sample', (): SampleResult => ({
          type: 'sample',
          sequences: [{ stop_reason: 'stop', tokens: d.sampleTokens, logprobs: d.sampleLogprobs }],
          ...(body.prompt_logprobs ? { prompt_logprobs: [null, ...Array.from({ length: n - 1 }, (_, i) => -(i + 1) / 8)] } : {}),
        }), { sample_sequence_ids: [`${nextFuture}:0`] }));
      }
      case '/api/v1/retrieve_future': {
        const f = futures.get(body.request_id);
        if (!f) return json(404, { detail: 'unknown request' });
        const step = d.pollScript[f.polls++];
        if (step === 'try_again') return json(200, { type: 'try_again', request_id: body.request_id, queue_state: 'active' });
        if (typeof step === 'number') return json(step, { detail: 'scripted poll answer' });
        if (f.kind === 'sample' && d.holdSamples) await new Promise<void>((r) => waiting.push(r));
        const failure = d.failFuture.get(f.kind);
        if (failure) return json(200, failure);
        const value = f.result();
        const accept = String(req.headers.accept ?? '');
        if (accept.includes('application/x-protobuf') && (f.kind === 'sample' || f.kind === 'forward_backward')) {
          const bytes = f.kind === 'sample' ? encodeSampleResponse(value as SampleResult) : encodeForwardBackwardOutput(value as ForwardBackwardResult);
          res.writeHead(200, { 'content-type': 'application/x-protobuf' });
          return res.end(bytes);
        }
        return json(200, value);
      }
      default: return json(404, { detail: `no route ${path}` });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  d.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return d;
}
