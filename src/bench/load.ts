// `bench load`: the real server (`openclaw-rl serve` as a child process, judging and training on)
// under N concurrent streaming sessions for a fixed time. Each simulated user asks for a story,
// streams the answer, replies with feedback (which the judge turns into a reward) and starts over.
//
// The judge is, by default, the server's `llm` backend talking to a stand-in endpoint
// (bench/judge-endpoint.ts) that the benchmark can take down: `outage` makes it answer 503 for a
// while, as a restarting model server does. After the load (and the outage) the benchmark waits for
// the server to drain its backlog, up to `drainSeconds`.
//
// Reported: failed requests (any non-200 answer, stream error or missing [DONE]), latency and time
// to first token percentiles, the server's resident memory (sampled each second from /proc); and,
// read from the server's own store, the share of turns whose next state carries feedback that were
// judged, and judged and trained — at the end of the load and after the drain — the judge lag
// (next state → stored judgement) and the staleness of trained samples.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdtempSync, mkdirSync, readdirSync, rmSync, createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { startJudgeEndpoint, type JudgeEndpoint } from './judge-endpoint.ts';
import { nearestRank } from '../util/recent.ts';
import type { PaceStatus } from '../trainer/pace.ts';

export interface LoadOptions {
  model: string;
  sessions: number;
  seconds: number;
  maxTokens: number;
  /** 'endpoint': the `llm` judge against the stand-in endpoint (can be taken down); 'lexical': in-process */
  judge?: 'endpoint' | 'lexical';
  /** take the judge endpoint down `startSeconds` into the load, for `seconds` */
  outage?: { startSeconds: number; seconds: number } | null;
  /** after the load and the outage, how long to wait for the backlog to be judged and trained */
  drainSeconds?: number;
  /** extra serve flags */
  serveArgs?: string[];
  /**
   * keep the server's data folder here (an empty or new folder) with its whole log in serve.log, instead of a
   * temporary folder removed at the end: the store, the trainer's steps and why any batch was set aside
   */
  keepData?: string | null;
  log?: (line: string) => void;
}

/** Where the turns whose next state carries the user's feedback stand, from the server's store. */
export interface Coverage {
  /** main turns paired with the user's feedback (every one in this benchmark carries a verdict) */
  signalTurns: number;
  judged: number;
  /** judged with a non-zero score */
  scored: number;
  judgedAndTrained: number;
  /** judgedAndTrained / signalTurns */
  share: number;
  samples: Record<string, number>;
  /** next state → stored judgement, over the judged turns (seconds) */
  judgeLagSeconds: { p50: number; p99: number; max: number };
}

export interface LoadResult {
  sessions: number;
  seconds: number;
  requests: number;
  failed: number;
  failures: Record<string, number>;
  latencyMs: { p50: number; p99: number; max: number };
  firstTokenMs: { p50: number; p99: number };
  rssMiB: { start: number; max: number; end: number; afterDrain: number };
  training: { steps: number; version: number; noOpSteps: number };
  outage: { startSeconds: number; seconds: number; refused: number } | null;
  atLoadEnd: Coverage;
  afterDrain: Coverage & { seconds: number };
  /** trained samples per versions-behind bucket (the server's own figures) */
  staleness: Record<string, number>;
  /** serve's training pace (--max-lag): turns that waited for the trainer and how long; null when off */
  pace: PaceStatus | null;
  /** where the server's memory is, from its /metrics at the end of the load and after the drain (MiB) */
  memory: { atLoadEnd: MemoryFigures; afterDrain: MemoryFigures };
}

export interface MemoryFigures { prefixCache: number; prefixCacheBudget: number; heapUsed: number; external: number }

/** Memory figures out of the server's Prometheus text (MiB; NaN when absent). */
export function memoryFigures(metrics: string): MemoryFigures {
  const get = (name: string) => { const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics); return m ? Number(m[1]) / 2 ** 20 : NaN; };
  return {
    prefixCache: get('openclaw_rl_prefix_cache_bytes'), prefixCacheBudget: get('openclaw_rl_prefix_cache_budget_bytes'),
    heapUsed: get('nodejs_heap_size_used_bytes'), external: get('nodejs_external_memory_bytes'),
  };
}

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily', 'One sunny day'];

/** The nearest-rank percentile (kept under this name for existing callers). */
export const percentile = nearestRank;

function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch { return NaN; }
}

function startServer(o: LoadOptions, dataDir: string, judge: JudgeEndpoint | null, logFile: WriteStream | null): Promise<{ proc: ChildProcess; url: string }> {
  const judgeArgs = judge ? ['--judge', 'llm', '--judge-url', judge.url, '--judge-model', 'lexical-stand-in'] : ['--judge', 'lexical'];
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', o.model, '--port', '0', '--data-dir', dataDir, ...judgeArgs,
    '--served-model-name', 'load', ...(o.serveArgs ?? [])], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, OPENCLAW_RL_API_KEY: '' } });
  let log = '';
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (d) => { logFile?.write(d); log += d; if (log.length > 1 << 20) log = log.slice(-(1 << 19)); const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) resolve({ proc, url: m[1] }); });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${log.slice(-4000)}`)));
  });
}

/** One streaming request; resolves with its timings, or throws why it failed. */
async function streamOnce(url: string, body: object, session: string): Promise<{ ms: number; firstMs: number; text: string }> {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-session-id': session }, body: JSON.stringify({ ...body, stream: true }) });
  if (r.status !== 200) { await r.body?.cancel(); throw new Error(`status ${r.status}`); }
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

/** The coverage figures, read from the server's SQLite store (a second reader beside the server: WAL allows it). */
export function coverage(dataDir: string): Coverage {
  const db = new DatabaseSync(join(dataDir, 'openclaw-rl.sqlite'), { readOnly: true });
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    const one = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
    const paired = `FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id LEFT JOIN samples s ON s.turn_id = t.id
      WHERE t.turn_type = 'main' AND t.next_state_status = 'paired'`;
    const signalTurns = one(`SELECT COUNT(*) AS n ${paired}`);
    const judged = one(`SELECT COUNT(*) AS n ${paired} AND j.status = 'done'`);
    const scored = one(`SELECT COUNT(*) AS n ${paired} AND j.status = 'done' AND j.score != 0`);
    const judgedAndTrained = one(`SELECT COUNT(*) AS n ${paired} AND j.status = 'done' AND s.status = 'trained'`);
    const samples = Object.fromEntries((db.prepare('SELECT status, COUNT(*) AS n FROM samples GROUP BY status').all() as { status: string; n: number }[]).map((r) => [r.status, Number(r.n)]));
    // paired when the session's next main turn began (see Store.pairedAt)
    // from the next turn's row: under serve's training pace that row is written after the turn's wait, while its next
    // state went to the judge before it, so the lag can read below zero (the server's own figure is in /metrics)
    const lags = (db.prepare(`SELECT j.updated_at - n.created_at AS lag FROM turns t JOIN judgements j ON j.turn_id = t.id
      JOIN turns n ON n.session_id = t.session_id AND n.turn_type = 'main' AND n.idx = t.idx + 1 WHERE j.status = 'done'`).all() as { lag: number }[]).map((r) => Number(r.lag) / 1000);
    return {
      signalTurns, judged, scored, judgedAndTrained, share: signalTurns ? judgedAndTrained / signalTurns : 0, samples,
      judgeLagSeconds: { p50: nearestRank(lags, 50), p99: nearestRank(lags, 99), max: lags.length ? Math.max(...lags) : NaN },
    };
  } finally {
    db.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchLoad(o: LoadOptions): Promise<LoadResult> {
  const log = o.log ?? (() => {});
  if (o.outage && (o.judge ?? 'endpoint') !== 'endpoint') throw new Error('a judge outage needs the judge endpoint (judge: endpoint)');
  const dataDir = o.keepData ? keptDataDir(o.keepData) : mkdtempSync(join(tmpdir(), 'ocrl-load-'));
  const logFile = o.keepData ? createWriteStream(join(dataDir, 'serve.log')) : null;
  const judge = (o.judge ?? 'endpoint') === 'endpoint' ? await startJudgeEndpoint() : null;
  const { proc, url } = await startServer(o, dataDir, judge, logFile).catch(async (e) => { await judge?.close(); logFile?.end(); throw e; });
  const latencies: number[] = [], firsts: number[] = [];
  const failures: Record<string, number> = {};
  let requests = 0;
  const rss = { start: rssMiB(proc.pid!), max: 0, end: 0, afterDrain: 0 };
  const sampler = setInterval(() => { rss.max = Math.max(rss.max, rssMiB(proc.pid!) || 0); }, 1000);
  const t0 = performance.now();
  const deadline = t0 + o.seconds * 1000;
  const outageTimers: NodeJS.Timeout[] = [];
  const outageEnd = o.outage ? t0 + (o.outage.startSeconds + o.outage.seconds) * 1000 : t0;
  if (o.outage && judge) {
    outageTimers.push(setTimeout(() => { judge.down = true; log(`bench load: judge endpoint DOWN for ${o.outage!.seconds} s`); }, o.outage.startSeconds * 1000));
    outageTimers.push(setTimeout(() => { judge.down = false; log('bench load: judge endpoint back'); }, (o.outage.startSeconds + o.outage.seconds) * 1000));
  }
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
  const status = async () => await (await fetch(`${url}/admin/status`)).json() as {
    trainer?: { step: number; policyVersion: number; noOpSteps?: number; staleness?: Record<string, number>; samples: Record<string, number>; batchSize: number } | null;
    judgeHealth?: { backlog?: number } | null;
    pace?: PaceStatus | null;
  };
  const progress = setInterval(() => log(`bench load: ${((performance.now() - t0) / 1000).toFixed(0)} s, ${requests} requests, ${Object.values(failures).reduce((a, b) => a + b, 0)} failed, server RSS ${rssMiB(proc.pid!).toFixed(0)} MiB`), 15_000);
  try {
    await Promise.all(Array.from({ length: o.sessions }, (_, u) => user(u)));
    rss.end = rssMiB(proc.pid!);
    const scrape = async () => memoryFigures(await (await fetch(`${url}/metrics`)).text());
    const memoryAtLoadEnd = await scrape();
    const atLoadEnd = coverage(dataDir);
    log(`bench load: load over; ${atLoadEnd.judgedAndTrained}/${atLoadEnd.signalTurns} turns with feedback judged and trained so far`);
    // wait for the outage to end, then for the backlog to be judged and trained
    const drainStart = performance.now();
    if (outageEnd > drainStart) await sleep(outageEnd - drainStart);
    const drainDeadline = performance.now() + (o.drainSeconds ?? 60) * 1000;
    while (performance.now() < drainDeadline) {
      const st = await status();
      const pending = st.trainer?.samples?.pending ?? 0;
      const now = coverage(dataDir);
      const built = Object.values(now.samples).reduce((x, y) => x + y, 0);
      // every turn judged, every judgement made a sample (or none), and less than a batch left
      if ((st.judgeHealth?.backlog ?? 0) === 0 && now.judged >= atLoadEnd.signalTurns && built >= now.judged && pending < (st.trainer?.batchSize ?? 1)) break;
      await sleep(1000);
    }
    const drained = (performance.now() - drainStart) / 1000;
    const after = coverage(dataDir);
    rss.afterDrain = rssMiB(proc.pid!);
    const memoryAfterDrain = await scrape();
    rss.max = Math.max(rss.max, rss.end, rss.afterDrain);
    const st = await status();
    const failed = Object.values(failures).reduce((a, b) => a + b, 0);
    return {
      sessions: o.sessions, seconds: o.seconds, requests, failed, failures,
      latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      firstTokenMs: { p50: percentile(firsts, 50), p99: percentile(firsts, 99) },
      rssMiB: rss, training: { steps: st.trainer?.step ?? 0, version: st.trainer?.policyVersion ?? 0, noOpSteps: st.trainer?.noOpSteps ?? 0 },
      outage: o.outage && judge ? { ...o.outage, refused: judge.refused } : null,
      atLoadEnd, afterDrain: { ...after, seconds: +drained.toFixed(1) }, staleness: st.trainer?.staleness ?? {}, pace: st.pace ?? null,
      memory: { atLoadEnd: memoryAtLoadEnd, afterDrain: memoryAfterDrain },
    };
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    for (const t of outageTimers) clearTimeout(t);
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    await judge?.close();
    if (logFile) await new Promise((r) => logFile.end(r));
    if (!o.keepData) {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(`${dataDir}.key`, { force: true });
    }
  }
}

/** The folder to keep the run's data in: new, or empty (a run must not mix its store with another's). */
export function keptDataDir(dir: string): string {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new Error(`--keep-data ${dir}: the folder is not empty (give a new or empty folder)`);
  mkdirSync(dir, { recursive: true });
  return dir;
}
