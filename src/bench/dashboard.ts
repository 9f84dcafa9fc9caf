// `openclaw-rl bench dashboard`: what an open dashboard costs a serving process. A real `openclaw-rl
// serve` child (learning on, lexical judge) first trains a few steps so the dashboard has curves,
// turns and judgements to show; then the same streaming chat load (the gateway benchmark's concurrent
// phase) runs in rounds with and without a poller that makes the page's requests (live?after=N every
// 2 s, the 30 newest turns, sessions and versions when the step changes), in alternating order. The
// server's CPU time (utime + stime from /proc) per round is compared: overhead = CPU with the page /
// CPU without − 1, median over rounds.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './stats.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const PROMPTS = ['Once upon a time', 'The little dog', 'One day, Lily', 'Tom and Sam went to the park'];

export interface DashboardBenchResult {
  model: string; rounds: number; requestsPerRound: number; maxTokens: number; concurrency: number; pollMs: number;
  cpuMsWithout: number[]; cpuMsWith: number[]; wallMsWithout: number[]; wallMsWith: number[]; pollsPerRound: number[];
  /** median over rounds of (CPU with the page / CPU without) − 1 */
  overheadMedian: number;
  /** CPU of one poll (all its requests), from the extra CPU and the polls made during the load */
  cpuMsPerPoll: number;
  /** the same, measured apart: 100 polls back to back on the idle server, minus an idle window as long */
  cpuMsPerPollIdle: number;
  /** what one page polling every pollMs costs against the server's CPU under the load: cpuMsPerPollIdle / pollMs ÷ (CPU/wall without the page) */
  overheadFromIdlePolls: number;
}

/** The child's CPU time in ms (user + system), from /proc/<pid>/stat. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11], fields[12] are utime and stime (the 14th and 15th of the whole line), in clock ticks (100/s on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function startServe(model: string, dataDir: string, log: (l: string) => void): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--model', model, '--data-dir', dataDir, '--port', '0', '--judge', 'lexical', '--method', 'binary',
    '--batch-size', '4', '--learning-rate', '0.01', '--lora-rank', '4', '--lora-alpha', '8'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /at (http:\/\/[^ ]+)\/v1/.exec(err);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  log(`serve child ${child.pid} at ${url}`);
  return { child, url };
}

async function chat(url: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return r.text();
}

/** The page's polling, as src/dashboard/static/app.js does it. */
function startPoller(url: string, pollMs: number, maxPolls = Infinity): { done: Promise<void>; stop(): Promise<number> } {
  let after = 0, lastStep = -1, polls = 0, stopped = false;
  const get = async (path: string) => (await fetch(`${url}${path}`)).json() as Promise<Record<string, any>>;
  const loop = (async () => {
    while (!stopped && polls < maxPolls) {
      const live = await get(`/admin/dashboard/live?after=${after}`);
      after = live.metrics.next;
      await get('/admin/dashboard/turns?limit=30');
      if (live.overview.step !== lastStep) { lastStep = live.overview.step; await Promise.all([get('/admin/dashboard/versions'), get('/admin/dashboard/sessions?limit=200')]); }
      polls++;
      if (pollMs > 0) await new Promise((r) => setTimeout(r, pollMs));
    }
  })();
  return { done: loop, async stop() { stopped = true; await loop; return polls; } };
}

export async function benchDashboard(o: { model: string; rounds?: number; requests?: number; maxTokens?: number; concurrency?: number; pollMs?: number; log?: (l: string) => void }): Promise<DashboardBenchResult> {
  const log = o.log ?? (() => {});
  const rounds = o.rounds ?? 5, n = o.requests ?? 600, maxTokens = o.maxTokens ?? 128, concurrency = o.concurrency ?? 8, pollMs = o.pollMs ?? 2000;
  const dataDir = mkdtempSync(join(tmpdir(), 'ocrl-bench-dashboard-'));
  const { child, url } = await startServe(o.model, dataDir, log);
  try {
    const model = ((await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] }).data[0].id;
    // something to show: conversations with feedback, judged and trained on
    for (let c = 0; c < 16; c++) {
      const prompt = PROMPTS[c % PROMPTS.length];
      const first = JSON.parse(await chat(url, { model, messages: [{ role: 'user', content: prompt }], max_tokens: 24, seed: c }, { 'x-session-id': `warm-${c}` }));
      const answer = first.choices[0].message.content as string;
      await chat(url, { model, messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: /dog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.' }], max_tokens: 4 },
        { 'x-session-id': `warm-${c}`, 'x-session-done': '1' });
    }
    for (let i = 0; i < 600; i++) {
      const s = await (await fetch(`${url}/admin/status`)).json() as { trainer: { step: number; samples: Record<string, number> } };
      if (s.trainer.step >= 4 && !s.trainer.samples.pending) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    log(`warm-up done: ${JSON.stringify((await (await fetch(`${url}/admin/dashboard/live`)).json() as { overview: unknown }).overview).slice(0, 200)}…`);
    let session = 0;
    const load = async () => {
      const t0 = performance.now(), c0 = cpuMs(child.pid!);
      let next = 0;
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next < n) {
          const i = next++;
          await chat(url, { model, messages: [{ role: 'user', content: PROMPTS[i % PROMPTS.length] }], max_tokens: maxTokens, temperature: 1, seed: i, stream: true },
            { 'x-session-id': `load-${session++}`, 'x-session-done': '1' });
        }
      }));
      return { cpu: cpuMs(child.pid!) - c0, wall: performance.now() - t0 };
    };
    await load(); // warm-up of the load itself
    const res: DashboardBenchResult = {
      model: o.model, rounds, requestsPerRound: n, maxTokens, concurrency, pollMs, cpuMsWithout: [], cpuMsWith: [], wallMsWithout: [], wallMsWith: [], pollsPerRound: [],
      overheadMedian: 0, cpuMsPerPoll: 0, cpuMsPerPollIdle: 0, overheadFromIdlePolls: 0,
    };
    // one poll's cost apart from the load: 100 back to back (the first one also fetches every metrics line), minus idle time
    const idleWindow = async (ms: number) => { const c0 = cpuMs(child.pid!); await new Promise((r) => setTimeout(r, ms)); return cpuMs(child.pid!) - c0; };
    const c0 = cpuMs(child.pid!), t0 = performance.now();
    const burst = startPoller(url, 0, 100);
    await burst.done;
    const polls = await burst.stop();
    const burstCpu = cpuMs(child.pid!) - c0, burstWall = performance.now() - t0;
    const idle = await idleWindow(burstWall);
    res.cpuMsPerPollIdle = +((burstCpu - idle) / polls).toFixed(3);
    log(`${polls} polls back to back: server CPU ${burstCpu} ms in ${burstWall.toFixed(0)} ms (idle window as long: ${idle} ms) → ${res.cpuMsPerPollIdle} ms per poll`);
    for (let r = 0; r < rounds; r++) {
      for (const withPage of r % 2 ? [true, false] : [false, true]) {
        const poller = withPage ? startPoller(url, pollMs) : null;
        const { cpu, wall } = await load();
        const polls = (await poller?.stop()) ?? 0;
        if (withPage) { res.cpuMsWith.push(cpu); res.wallMsWith.push(Math.round(wall)); res.pollsPerRound.push(polls); }
        else { res.cpuMsWithout.push(cpu); res.wallMsWithout.push(Math.round(wall)); }
        log(`round ${r + 1} ${withPage ? 'with the page' : 'without'}: server CPU ${cpu} ms in ${wall.toFixed(0)} ms wall${withPage ? `, ${polls} polls` : ''}`);
      }
    }
    const ratios = res.cpuMsWith.map((c, i) => c / res.cpuMsWithout[i] - 1);
    res.overheadMedian = +median(ratios).toFixed(4);
    res.cpuMsPerPoll = +((median(res.cpuMsWith) - median(res.cpuMsWithout)) / Math.max(1, median(res.pollsPerRound))).toFixed(2);
    const loadCpuPerMs = median(res.cpuMsWithout.map((c, i) => c / res.wallMsWithout[i]));
    res.overheadFromIdlePolls = +((res.cpuMsPerPollIdle / pollMs) / loadCpuPerMs).toFixed(5);
    return res;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
