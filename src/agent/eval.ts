// `agent eval`: n episodes per task (N at once) with the published weights; accuracy (the share of
// successful episodes) and unbiased pass@k per task, averaged. Failed episodes (lost environments)
// are reported apart and left out of the statistics.
import type { Engine } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import type { EnvPool, Task } from '../env/types.ts';
import { runEpisode, type EpisodeResult } from './episode.ts';
import { passAtK } from './rewards.ts';

export interface AgentEvalOptions {
  workers: number;
  /** episodes per task */
  samples: number;
  ks: number[];
  maxTokensPerTurn: number;
  temperature: number;
  topP: number;
  seed: number;
  runId: string;
  allocateTimeoutMs: number;
  onEpisode?: (done: number, total: number, ep: EpisodeResult) => void;
}

export interface AgentEvalResult {
  tasks: number;
  episodes: number;
  failed: number;
  accuracy: number;
  meanReward: number;
  passAtK: Record<string, number>;
  meanToolCalls: number;
  /** share of episodes that made at least one tool call */
  toolUse: number;
  tokensPerSecond: number;
  envStepsPerSecond: number;
  durationMs: number;
  /** the first prompt of one episode per task (for drift measurements) */
  firstPrompts: number[][];
}

export async function agentEval(engine: Engine, store: Store | null, pool: EnvPool, tasks: Task[], o: AgentEvalOptions): Promise<AgentEvalResult> {
  const t0 = performance.now();
  const jobs = tasks.flatMap((task, ti) => Array.from({ length: o.samples }, (_, k) => ({ task, ti, k })));
  const results: EpisodeResult[][] = tasks.map(() => []);
  let next = 0, done = 0;
  const worker = async () => {
    for (;;) {
      const j = jobs[next++];
      if (!j) return;
      const ep = await runEpisode(engine, store, pool, j.task, {
        maxTokensPerTurn: o.maxTokensPerTurn, temperature: o.temperature, topP: o.topP, sessionId: `${o.runId}-t${j.ti}-s${j.k}`, source: 'agent-eval',
        allocateTimeoutMs: o.allocateTimeoutMs, seed: o.seed * 1_000_003 + j.ti * 101 + j.k,
      });
      results[j.ti].push(ep);
      o.onEpisode?.(++done, jobs.length, ep);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.workers) }, worker));
  const ok = results.flat().filter((e) => e.status === 'done');
  const pass: Record<string, number> = {};
  for (const k of o.ks) {
    const per = results.map((eps) => eps.filter((e) => e.status === 'done')).filter((eps) => eps.length >= k);
    pass[`pass@${k}`] = per.length ? per.reduce((a, eps) => a + passAtK(eps.length, eps.filter((e) => e.evaluation!.success).length, k), 0) / per.length : NaN;
  }
  const s = (performance.now() - t0) / 1000;
  const all = results.flat();
  return {
    tasks: tasks.length, episodes: all.length, failed: all.length - ok.length,
    accuracy: ok.length ? ok.filter((e) => e.evaluation!.success).length / ok.length : 0,
    meanReward: ok.length ? ok.reduce((a, e) => a + e.evaluation!.score, 0) / ok.length : 0,
    passAtK: pass, meanToolCalls: ok.length ? ok.reduce((a, e) => a + e.toolCalls, 0) / ok.length : 0,
    toolUse: ok.length ? ok.filter((e) => e.toolCalls > 0).length / ok.length : 0,
    tokensPerSecond: all.reduce((a, e) => a + e.sampledTokens, 0) / s, envStepsPerSecond: all.reduce((a, e) => a + e.envSteps, 0) / s, durationMs: s * 1000,
    firstPrompts: results.map((eps) => eps.find((e) => e.turns.length > 0)?.turns[0].promptIds).filter((p): p is number[] => p !== undefined),
  };
}
