// `bench personalize --via serve`: the same personalization as `bench personalize`, but through the
// real product path — `openclaw-rl serve` as a child process with its default recipe, its
// event-driven judge and background trainer, and the simulated users talking to it over HTTP with
// the `openai` SDK, unpaced (nobody waits for judging or training between conversations).
//
// Evaluation is exactly `bench personalize`'s (same held-out prompts, seeds, fluency band and KL
// code), run afterwards in this process on the versions the server was serving at each evaluation
// point: every published version is kept in the server's archive (<data>/checkpoints/versions/vN),
// so each point is loaded from there. The traffic itself is never slowed by an evaluation.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import type { Persona } from './persona.ts';
import { SimulatedUser } from './user.ts';
import { evaluateHeldOut, calibrateFluencyCached, preferenceBandNote, klToBase } from './evaluate.ts';
import type { FluencyBand } from '../learn/fluency.ts';
import type { PaceStatus } from '../trainer/pace.ts';

export interface ServePersonalizeOptions {
  model: string;
  persona: Persona;
  conversations: number;
  seed?: number;
  evalEvery?: number;
  evalK?: number;
  users?: number;
  /** serve flags beyond the defaults (the recipe's own flags when the caller overrides them) */
  serveArgs?: string[];
  /** the server's judge (default lexical) */
  judge?: 'lexical' | 'self';
  /** after the last conversation, how long the server may take to judge and train what it has */
  drainSeconds?: number;
  progress?: (line: string) => void;
  /** where the server's log (serve.log) and every evaluated sample (serve-samples.jsonl) are kept; none when absent */
  outDir?: string;
}

export interface ServePoint {
  conversations: number; policyVersion: number; rate: number; fluentRate: number; satisfiedAndFluentRate: number; klToBase: number;
  /** distinct token bigrams over the held-out samples (bench/evaluate.ts) */
  distinct2: number;
  /** share of held-out samples that repeat an earlier one to the same prompt word for word */
  repeatRate: number;
  /** seconds since the start when the point was taken (the traffic's clock) */
  seconds: number;
}

export interface ServePersonalizeResult {
  persona: string; seed: number; conversations: number; trafficSeconds: number; wallSeconds: number; fluencyBand: FluencyBand;
  curve: ServePoint[];
  /** the version served once the server had judged and trained what the conversations gave it */
  afterDrain: ServePoint & { drainSeconds: number };
  /** the server's samples by status at the end (stale = dropped as too old) */
  samples: Record<string, number>;
  steps: number;
  /** serve's --max-lag: the turns that waited for the trainer and how long (null when off) */
  pace: PaceStatus | null;
}

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));

function startServe(o: ServePersonalizeOptions, dataDir: string): Promise<{ proc: ChildProcess; url: string }> {
  const users = o.users ?? 1;
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', o.model, '--port', '0', '--data-dir', dataDir, '--judge', o.judge ?? 'lexical',
    '--served-model-name', 'policy', '--keep-versions', '1000000', '--max-concurrent', String(users * 4 + 4), ...(o.serveArgs ?? [])],
  { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, OPENCLAW_RL_API_KEY: '' } });
  if (o.outDir) {
    mkdirSync(o.outDir, { recursive: true });
    proc.stderr!.pipe(createWriteStream(join(o.outDir, 'serve.log')));
  }
  let log = '';
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (d) => { log += d; if (log.length > 1 << 20) log = log.slice(-(1 << 19)); const m = /at (http:\/\/\S+)\/v1/.exec(log); if (m) resolve({ proc, url: m[1] }); });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${log.slice(-4000)}`)));
  });
}

interface ServeStatus {
  trainer?: { step: number; policyVersion: number; batchSize: number; samples: Record<string, number> } | null;
  judgeHealth?: { backlog?: number } | null;
  pace?: PaceStatus | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runPersonalizeViaServe(o: ServePersonalizeOptions): Promise<ServePersonalizeResult> {
  const seed = o.seed ?? 1, users = o.users ?? 1, evalEvery = o.evalEvery ?? 16, evalK = o.evalK ?? 20;
  const label = `[${o.persona.name} · via serve]`;
  const t0 = performance.now();
  const dataDir = mkdtempSync(join(tmpdir(), 'ocrl-serve-personalize-'));
  const { proc, url } = await startServe(o, dataDir);
  const status = async () => await (await fetch(`${url}/admin/status`)).json() as ServeStatus;
  const points: { conversations: number; policyVersion: number; seconds: number }[] = [];
  let drain = { policyVersion: 0, seconds: 0, drainSeconds: 0 };
  let samples: Record<string, number> = {};
  let steps = 0;
  let pace: PaceStatus | null = null;
  let trafficSeconds = 0;
  try {
    const userList = Array.from({ length: users }, (_, i) => new SimulatedUser({ baseUrl: `${url}/v1`, model: 'policy', persona: o.persona, seed: seed * 1000 + i, id: `u${i}` }));
    const mark = async (done: number) => {
      const st = await status();
      points.push({ conversations: done, policyVersion: st.trainer?.policyVersion ?? 0, seconds: (performance.now() - t0) / 1000 });
      o.progress?.(`${label} ${done}/${o.conversations} conversations · serving version ${st.trainer?.policyVersion ?? 0} · ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    };
    await mark(0);
    let done = 0;
    while (done < o.conversations) {
      const round = Math.min(users, o.conversations - done);
      await Promise.all(userList.slice(0, round).map((u, i) => u.converse(done + i)));
      done += round;
      if (done % evalEvery === 0 || done === o.conversations) await mark(done);
    }
    trafficSeconds = (performance.now() - t0) / 1000;
    // let the server finish judging and training what it was given
    const drainStart = performance.now();
    const deadline = drainStart + (o.drainSeconds ?? 120) * 1000;
    let st = await status();
    while (performance.now() < deadline) {
      const pending = st.trainer?.samples?.pending ?? 0;
      if ((st.judgeHealth?.backlog ?? 0) === 0 && pending < (st.trainer?.batchSize ?? 1)) {
        // the judge may still be about to pair the last turns: make sure twice, a second apart
        await sleep(1000);
        const again = await status();
        if ((again.judgeHealth?.backlog ?? 0) === 0 && (again.trainer?.samples?.pending ?? 0) === pending && again.trainer?.step === st.trainer?.step) { st = again; break; }
        st = again;
        continue;
      }
      await sleep(500);
      st = await status();
    }
    drain = { policyVersion: st.trainer?.policyVersion ?? 0, seconds: (performance.now() - t0) / 1000, drainSeconds: +((performance.now() - drainStart) / 1000).toFixed(1) };
    samples = st.trainer?.samples ?? {};
    steps = st.trainer?.step ?? 0;
    pace = st.pace ?? null;
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  }
  // evaluate the versions served at each point, in this process
  const engine = await EmbeddedEngine.load(o.model);
  try {
    o.progress?.(`${label} calibrating fluency on the base model's own held-out samples…`);
    const band = await calibrateFluencyCached(engine, o.model, o.persona, evalK);
    const bandNote = preferenceBandNote(band, o.persona, evalK);
    if (bandNote) o.progress?.(`${label} ${bandNote}`);
    const evaluated = new Map<number, Omit<ServePoint, 'conversations' | 'seconds' | 'policyVersion'>>();
    const texts: string[] = [];
    const evaluate = async (version: number) => {
      if (evaluated.has(version)) return evaluated.get(version)!;
      if (version > 0) await engine.publish(await engine.loadAdapter(join(dataDir, 'checkpoints', 'versions', `v${version}`)));
      const held = await evaluateHeldOut(engine, o.persona, evalK, band, version > 0 ? 'published' : 'base');
      for (const x of held.samples) texts.push(JSON.stringify({ via: 'serve', runSeed: seed, policyVersion: version, ...x }));
      const r = { rate: held.rate, fluentRate: held.fluentRate, satisfiedAndFluentRate: held.satisfiedAndFluentRate, distinct2: held.distinct2, repeatRate: held.repeatRate, klToBase: version > 0 ? await klToBase(engine) : 0 };
      evaluated.set(version, r);
      o.progress?.(`${label} version ${version}: held-out satisfaction ${pct(r.rate)} · satisfied-and-fluent ${pct(r.satisfiedAndFluentRate)} (fluent ${pct(r.fluentRate)}) · distinct-2 ${r.distinct2.toFixed(2)} · repeats ${pct(r.repeatRate)} · KL ${r.klToBase.toFixed(3)}`);
      return r;
    };
    const curve: ServePoint[] = [];
    for (const p of points) curve.push({ ...p, ...(await evaluate(p.policyVersion)) });
    const afterDrain = { conversations: o.conversations, policyVersion: drain.policyVersion, seconds: drain.seconds, drainSeconds: drain.drainSeconds, ...(await evaluate(drain.policyVersion)) };
    if (o.outDir) writeFileSync(join(o.outDir, 'serve-samples.jsonl'), texts.map((l) => `${l}\n`).join(''));
    return {
      persona: o.persona.name, seed, conversations: o.conversations, trafficSeconds: +trafficSeconds.toFixed(1), wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
      fluencyBand: band.plain, curve, afterDrain, samples, steps, pace,
    };
  } finally {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(`${dataDir}.key`, { force: true });
  }
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
