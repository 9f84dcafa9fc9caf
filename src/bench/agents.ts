// Agent rollout throughput: environment steps/s and sampled tokens/s with N episodes at once, over
// the in-process pool and over an env server on loopback HTTP (the same pool behind the protocol),
// side by side in one run. Episodes are policy rollouts without training (agent eval's loop).
import type { Engine } from '../engine/types.ts';
import type { EnvPool } from '../env/types.ts';
import { LocalPool } from '../env/pool.ts';
import { startEnvServer } from '../env/server.ts';
import { HttpPool } from '../env/client.ts';
import { envFactory, builtinTasks, loadTasks } from '../env/tasks.ts';
import { agentEval } from '../agent/eval.ts';

export interface AgentBenchOptions {
  env: string;
  workers: number[];
  /** episodes per measurement */
  episodes: number;
  maxTokens: number;
  pools: ('local' | 'http')[];
  repeats: number;
  /** the tasks to play (a task-set spec or JSONL file, as agent train's --tasks; default builtin:train) */
  tasks?: string;
  /** toolcall: offer the sandboxed python tool besides the calculator (default true) */
  python?: boolean;
  log: (line: string) => void;
}

export interface AgentBenchRow {
  env: string; pool: 'local' | 'http'; workers: number; episodes: number;
  /** medians over the repeats */
  envStepsPerSecond: number; tokensPerSecond: number; episodesPerSecond: number; seconds: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

export async function benchAgents(engine: Engine, o: AgentBenchOptions): Promise<AgentBenchRow[]> {
  const rows: AgentBenchRow[] = [];
  const maxWorkers = Math.max(...o.workers);
  const factory = () => envFactory(o.env, { python: o.python });
  const local = new LocalPool(factory(), { capacity: maxWorkers });
  const served = o.pools.includes('http') ? await startEnvServer(new LocalPool(factory(), { capacity: maxWorkers }), { port: 0 }) : null;
  const pools: Record<'local' | 'http', EnvPool | null> = { local, http: served ? new HttpPool(served.url) : null };
  try {
    const set = o.tasks ? loadTasks(o.env, o.tasks) : builtinTasks(o.env, 'train', o.episodes, 10_000);
    const tasks = Array.from({ length: o.episodes }, (_, i) => set[i % set.length]);
    // warm-up: the engine's kernels and the first sandboxes
    await agentEval(engine, null, local, tasks.slice(0, 4), { workers: 4, samples: 1, ks: [1], maxTokensPerTurn: o.maxTokens, temperature: 1, topP: 1, seed: 0, runId: 'warm', allocateTimeoutMs: 60_000 });
    for (const n of o.workers) {
      for (const kind of o.pools) {
        const runs = [];
        for (let r = 0; r < o.repeats; r++) {
          const res = await agentEval(engine, null, pools[kind]!, tasks, { workers: n, samples: 1, ks: [1], maxTokensPerTurn: o.maxTokens, temperature: 1, topP: 1, seed: 100 + r, runId: `bench-${kind}-${n}-${r}`, allocateTimeoutMs: 60_000 });
          if (res.failed > 0) throw new Error(`${res.failed} episodes failed during the benchmark`);
          runs.push(res);
        }
        const row: AgentBenchRow = {
          env: o.env, pool: kind, workers: n, episodes: o.episodes,
          envStepsPerSecond: median(runs.map((x) => x.envStepsPerSecond)), tokensPerSecond: median(runs.map((x) => x.tokensPerSecond)),
          episodesPerSecond: median(runs.map((x) => x.episodes / (x.durationMs / 1000))), seconds: median(runs.map((x) => x.durationMs / 1000)),
        };
        rows.push(row);
        o.log(`${o.env} ${kind.padEnd(5)} N=${String(n).padStart(2)}: ${row.envStepsPerSecond.toFixed(1)} env steps/s, ${row.tokensPerSecond.toFixed(0)} tok/s, ${row.episodesPerSecond.toFixed(2)} episodes/s (median of ${o.repeats})`);
      }
    }
    return rows;
  } finally {
    await served?.close();
    await local.shutdown();
  }
}
