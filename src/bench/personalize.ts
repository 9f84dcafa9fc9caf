// `openclaw-rl bench personalize`: the product's promise, measured. A server with the embedded engine,
// simulated users of one persona talking to it over HTTP, the judge and the learning loop — and every
// few conversations the held-out satisfaction rate of the live policy, with drift (KL to base).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { Store } from '../store/store.ts';
import { startServer } from '../api/server.ts';
import { JudgeLoop } from '../judge/loop.ts';
import { createJudge, JUDGE_DEFAULTS, type JudgeConfig } from '../judge/config.ts';
import { TrainerLoop, TRAINER_DEFAULTS } from '../trainer/loop.ts';
import type { Method } from '../learn/advantages.ts';
import type { Persona } from './persona.ts';
import { SimulatedUser } from './user.ts';
import { satisfactionRate, klToBase, referenceLogLikelihood } from './evaluate.ts';
import { lineChartSvg, svgToPng } from './plot.ts';

export interface CurvePoint { conversations: number; rate: number; policyVersion: number; klToBase: number; referenceLogLikelihood: number; seconds: number }
export interface PersonalizeResult {
  persona: string; method: Method; seed: number; baseRate: number; finalRate: number; wallSeconds: number;
  conversations: number; steps: number; curve: CurvePoint[];
}

export interface PersonalizeOptions {
  model: string;
  persona: Persona;
  method: Method;
  conversations: number;
  seed?: number;
  /** evaluate every this many conversations */
  evalEvery?: number;
  /** samples per held-out prompt in each evaluation */
  evalK?: number;
  /** simulated users talking at once */
  users?: number;
  judge?: JudgeConfig;
  learningRate?: number;
  batchSize?: number;
  loraRank?: number;
  rewardBaseline?: 'none' | 'batch' | 'group';
  /** called with a live progress line */
  progress?: (line: string) => void;
}

export async function runPersonalize(o: PersonalizeOptions): Promise<PersonalizeResult> {
  const seed = o.seed ?? 1, users = o.users ?? 1, evalEvery = o.evalEvery ?? 16, evalK = o.evalK ?? 20;
  const t0 = performance.now();
  const engine = await EmbeddedEngine.load(o.model);
  const dir = mkdtempSync(join(tmpdir(), 'ocrl-personalize-'));
  const store = new Store(dir);
  const server = await startServer({ engine, store, modelId: 'policy', port: 0, maxConcurrent: users * 4 + 4 });
  const judge = createJudge(o.judge ?? JUDGE_DEFAULTS, engine);
  if (!judge) throw new Error('the benchmark needs a judge (lexical, self or llm)');
  const judgeLoop = new JudgeLoop(store, judge, { hints: o.method !== 'binary', concurrency: 8 });
  const trainer = new TrainerLoop(store, engine, {
    method: o.method, batchSize: o.batchSize ?? 8, learningRate: o.learningRate ?? 3e-3, rewardBaseline: o.rewardBaseline ?? TRAINER_DEFAULTS.rewardBaseline,
    lora: { rank: o.loraRank ?? 8, alpha: 2 * (o.loraRank ?? 8), seed }, maxStaleness: 8, checkpointDir: join(dir, 'checkpoints'), checkpointEvery: 1_000_000,
  });
  await trainer.init();
  const userList = Array.from({ length: users }, (_, i) => new SimulatedUser({ baseUrl: `${server.url}/v1`, model: 'policy', persona: o.persona, seed: seed * 1000 + i, id: `u${i}` }));
  const curve: CurvePoint[] = [];
  const evaluate = async (done: number) => {
    const point = {
      conversations: done, rate: await satisfactionRate(engine, o.persona, evalK), policyVersion: trainer.version,
      klToBase: trainer.version === 0 ? 0 : await klToBase(engine), referenceLogLikelihood: await referenceLogLikelihood(engine), seconds: (performance.now() - t0) / 1000,
    };
    curve.push(point);
    o.progress?.(`[${o.persona.name} · ${o.method}] ${done}/${o.conversations} conversations · version ${trainer.version} · held-out satisfaction ${(point.rate * 100).toFixed(0)}% · KL ${point.klToBase.toFixed(3)} · ${point.seconds.toFixed(1)} s`);
  };
  try {
    await evaluate(0);
    let done = 0, satisfiedSeen = 0;
    while (done < o.conversations) {
      const round = Math.min(users, o.conversations - done);
      const results = await Promise.all(userList.slice(0, round).map((u, i) => u.converse(done + i)));
      done += round;
      satisfiedSeen += results.filter((r) => r.satisfied).length;
      await judgeLoop.tick();
      await trainer.tick();
      if (done % evalEvery === 0 || done === o.conversations) await evaluate(done);
      else o.progress?.(`[${o.persona.name} · ${o.method}] ${done}/${o.conversations} conversations · version ${trainer.version} · satisfied in conversation ${((satisfiedSeen / done) * 100).toFixed(0)}%`);
    }
    return {
      persona: o.persona.name, method: o.method, seed, baseRate: curve[0].rate, finalRate: curve.at(-1)!.rate, wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
      conversations: o.conversations, steps: trainer.step, curve,
    };
  } finally {
    await server.close();
    await engine.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** curve.json, plot.svg, plot.png and summary.md for one or more runs of the same persona. */
export async function writeReport(outDir: string, runs: PersonalizeResult[]): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const files = ['curve.json', 'plot.svg', 'plot.png', 'summary.md'].map((f) => join(outDir, f));
  writeFileSync(files[0], JSON.stringify(runs.length === 1 ? runs[0] : runs, null, 2) + '\n');
  const svg = lineChartSvg(runs.map((r) => ({ label: r.method, points: r.curve.map((p) => ({ x: p.conversations, y: p.rate })) })), {
    title: `Held-out satisfaction — persona "${runs[0].persona}"`, xLabel: 'conversations', yLabel: 'satisfied answers',
  });
  writeFileSync(files[1], svg);
  await svgToPng(svg, files[2]);
  const at = (r: PersonalizeResult, n: number) => { const p = r.curve.filter((c) => c.conversations <= n).at(-1); return p ? `${(p.rate * 100).toFixed(0)}%` : '–'; };
  const lines = [
    `# Personalization: ${runs[0].persona}`, '',
    '| method | base | after 50 | after 100 | after 200 | final | conversations | steps | KL to base (final) | wall time |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.method} | ${(r.baseRate * 100).toFixed(0)}% | ${at(r, 50)} | ${at(r, 100)} | ${at(r, 200)} | ${(r.finalRate * 100).toFixed(0)}% | ${r.conversations} | ${r.steps} | ${r.curve.at(-1)!.klToBase.toFixed(3)} | ${r.wallSeconds} s |`),
    '',
  ];
  writeFileSync(files[3], lines.join('\n'));
  return files;
}
