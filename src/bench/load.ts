// `bench load`: the real server (`openclaw-rl serve` as a child process, judging and training on)
// under N concurrent streaming sessions for a fixed time. Each simulated user asks for a story,
// streams the answer, replies with feedback (which the judge turns into a reward) and starts over.
// Reported: failed requests (any non-200 answer, stream error or missing [DONE]), latency and time
// to first token percentiles, the server's resident memory (sampled each second from /proc), and
// how far training got while the load ran.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface LoadOptions {
  model: string;
  sessions: number;
  seconds: number;
  maxTokens: number;
  /** extra serve flags */
  serveArgs?: string[];
  log?: (line: string) => void;
}

export interface LoadResult {
  sessions: number;
  seconds: number;
  requests: number;
  failed: number;
  failures: Record<string, number>;
  latencyMs: { p50: number; p99: number; max: number };
  firstTokenMs: { p50: number; p99: number };
  rssMiB: { start: number; max: number; end: number };
  training: { steps: number; version: number };
}

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily', 'One sunny day'];

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function startServer(o: LoadOptions, dataDir: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', o.model, '--port', '0', '--data-dir', dataDir, '--judge', 'lexical',
    '--served-model-name', 'load', ...(o.serveArgs ?? [])], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (d) => { log += d; const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) resolve({ proc, url: m[1] }); });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${log}`)));
  });
}

/** One streaming request; resolves with its timings, or throws why it failed. */
async function streamOnce(url: string, body: object, session: string): Promise<{ ms: number; firstMs: number; text: string }> {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-session-id': session }, body: JSON.stringify({ ...body, stream: true }) });
  if (r.status !== 200) throw new Error(`status ${r.status}`);
  let firstMs = NaN, raw = '', text = '';
  const decoder = new TextDecoder();
  for await (const chunk of r.body!) {
    if (Number.isNaN(firstMs)) firstMs = performance.now() - t0;
    raw += decoder.decode(chunk as Uint8Array, { stream: true });
  }
  if (!raw.endsWith('data: [DONE]\n\n')) throw new Error('stream ended without [DONE]');
  if (raw.includes('"error"')) throw new Error('error in stream');
  for (const m of raw.matchAll(/"content":"((?:[^"\\]|\\.)*)"/g)) text += JSON.parse(`"${m[1]}"`);
  return { ms: performance.now() - t0, firstMs, text };
}

export async function benchLoad(o: LoadOptions): Promise<LoadResult> {
  const log = o.log ?? (() => {});
  const dataDir = mkdtempSync(join(tmpdir(), 'ocrl-load-'));
  const { proc, url } = await startServer(o, dataDir);
  const latencies: number[] = [], firsts: number[] = [];
  const failures: Record<string, number> = {};
  let requests = 0;
  const rss = { start: rssMiB(proc.pid!), max: 0, end: 0 };
  const sampler = setInterval(() => { rss.max = Math.max(rss.max, rssMiB(proc.pid!)); }, 1000);
  const deadline = performance.now() + o.seconds * 1000;
  const user = async (u: number) => {
    for (let c = 0; performance.now() < deadline; c++) {
      const session = `load-${u}-${c}`;
      const prompt = PROMPTS[(u + c) % PROMPTS.length];
      const run = async (body: object) => {
        requests++;
        try {
          const r = await streamOnce(url, body, session);
          latencies.push(r.ms); firsts.push(r.firstMs);
          return r.text;
        } catch (e) {
          const why = (e as Error).message;
          failures[why] = (failures[why] ?? 0) + 1;
          return null;
        }
      };
      const answer = await run({ model: 'load', messages: [{ role: 'user', content: prompt }], max_tokens: o.maxTokens, seed: u * 100_000 + c });
      if (answer === null) continue;
      const feedback = /\bdog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.';
      await run({ model: 'load', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 4 });
    }
  };
  const progress = setInterval(() => log(`bench load: ${requests} requests, ${Object.values(failures).reduce((a, b) => a + b, 0)} failed, server RSS ${rssMiB(proc.pid!).toFixed(0)} MiB`), 15_000);
  try {
    await Promise.all(Array.from({ length: o.sessions }, (_, u) => user(u)));
    rss.end = rssMiB(proc.pid!);
    rss.max = Math.max(rss.max, rss.end);
    const status = await (await fetch(`${url}/admin/status`)).json() as { trainer?: { step: number; policyVersion: number } | null };
    const failed = Object.values(failures).reduce((a, b) => a + b, 0);
    return {
      sessions: o.sessions, seconds: o.seconds, requests, failed, failures,
      latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      firstTokenMs: { p50: percentile(firsts, 50), p99: percentile(firsts, 99) },
      rssMiB: rss, training: { steps: status.trainer?.step ?? 0, version: status.trainer?.policyVersion ?? 0 },
    };
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(`${dataDir}.key`, { force: true });
  }
}
