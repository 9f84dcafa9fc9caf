// `openclaw-rl bench gateway`: what the HTTP front door adds. The same prompts go to the engine
// directly and through the server (non-streaming), interleaved in one run; then time to first byte
// when streaming, and throughput with many concurrent streaming clients.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { collect } from '../engine/types.ts';
import { Store } from '../store/store.ts';
import { startServer } from '../api/server.ts';
import { median, peakRssBytes } from './stats.ts';
import { request, Agent } from 'node:http';

/** A keep-alive HTTP POST with node:http (leaner than fetch, so the client adds little to the timing). */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
function postText(url: string, body: string | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers = body === null ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = request(url, { method: body === null ? 'GET' : 'POST', agent, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve(Buffer.concat(parts).toString()));
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

export interface GatewayBenchResult {
  model: string; requests: number; maxTokens: number;
  direct: { p50Ms: number; p99Ms: number }; gateway: { p50Ms: number; p99Ms: number };
  overheadP50Ms: number; overheadP99Ms: number;
  /** round trip of GET /healthz with the same client: what any HTTP hop costs on this machine */
  httpFloorP50Ms: number;
  streamingTtfbP50Ms: number;
  concurrency: number; concurrentTokensPerSec: number; concurrentWallMs: number;
  peakRssBytes: number;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export async function benchGateway(opts: { model: string; requests?: number; maxTokens?: number; concurrency?: number; log?: (l: string) => void }): Promise<GatewayBenchResult> {
  const log = opts.log ?? (() => {});
  const n = opts.requests ?? 40, maxTokens = opts.maxTokens ?? 16, concurrency = opts.concurrency ?? 16;
  const engine = await EmbeddedEngine.load(opts.model);
  const dir = mkdtempSync(join(tmpdir(), 'ocrl-bench-gateway-'));
  const store = new Store(dir);
  const server = await startServer({ engine, store, modelId: 'bench', port: 0, maxConcurrent: concurrency * 2 });
  const prompts = ['Once upon a time', 'The little dog', 'One day, Lily', 'Tom and Sam went to the park'];
  const body = (i: number, stream = false) => JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: prompts[i % prompts.length] }], max_tokens: maxTokens, temperature: 0, stream });
  try {
    // warm-up both paths
    for (let i = 0; i < 4; i++) {
      await collect(engine.sample(engine.tokenizer.encodeChat([{ role: 'user', content: prompts[i] }]), { maxTokens, temperature: 0, topP: 1, topK: 0 }));
      await postText(`${server.url}/v1/chat/completions`, body(i));
    }
    const direct: number[] = [], gateway: number[] = [], floor: number[] = [];
    for (let i = 0; i < n; i++) {
      const tf = performance.now();
      await postText(`${server.url}/healthz`, null);
      floor.push(performance.now() - tf);
      let t0 = performance.now();
      // the engine path includes rendering and tokenising, as the server does
      const ids = engine.tokenizer.encodeChat([{ role: 'user', content: prompts[i % prompts.length] }]);
      await collect(engine.sample(ids, { maxTokens, temperature: 0, topP: 1, topK: 0 }));
      direct.push(performance.now() - t0);
      t0 = performance.now();
      await postText(`${server.url}/v1/chat/completions`, body(i));
      gateway.push(performance.now() - t0);
    }
    log(`direct p50 ${median(direct).toFixed(2)} ms, gateway p50 ${median(gateway).toFixed(2)} ms, GET /healthz p50 ${median(floor).toFixed(2)} ms`);
    const ttfb: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const r = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(i, true) });
      const reader = r.body!.getReader();
      let first = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // the first chunk with generated text (the role chunk comes before any token)
        if (!first && /"content":"[^"]/.test(new TextDecoder().decode(value))) first = performance.now() - t0;
      }
      ttfb.push(first);
    }
    log(`streaming time to first token p50 ${median(ttfb).toFixed(2)} ms`);
    const t0 = performance.now();
    let tokens = 0;
    await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
      const r = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: prompts[i % 4] }], max_tokens: 128, temperature: 1, seed: i, stream: true, stream_options: { include_usage: true } }) });
      const text = await r.text();
      const usage = /"completion_tokens":(\d+)/.exec(text);
      tokens += usage ? Number(usage[1]) : 0;
    }));
    const wall = performance.now() - t0;
    log(`${concurrency} concurrent streams: ${tokens} tokens in ${wall.toFixed(0)} ms`);
    return {
      model: opts.model, requests: n, maxTokens,
      direct: { p50Ms: +median(direct).toFixed(3), p99Ms: +percentile(direct, 99).toFixed(3) },
      gateway: { p50Ms: +median(gateway).toFixed(3), p99Ms: +percentile(gateway, 99).toFixed(3) },
      overheadP50Ms: +(median(gateway) - median(direct)).toFixed(3), overheadP99Ms: +(percentile(gateway, 99) - percentile(direct, 99)).toFixed(3),
      httpFloorP50Ms: +median(floor).toFixed(3),
      streamingTtfbP50Ms: +median(ttfb).toFixed(3), concurrency, concurrentTokensPerSec: +((tokens / wall) * 1000).toFixed(1), concurrentWallMs: +wall.toFixed(0),
      peakRssBytes: peakRssBytes(),
    };
  } finally {
    await server.close();
    await engine.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
