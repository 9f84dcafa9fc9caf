// One trainer step of `agent train` on the tool-call environment, timed through the engine as the
// trainer calls it: forwardBackward (PPO) on 32 datums shaped like the tool-call batches (the
// environment's real system prompt and tools, a question, a 33-token answer), with the KL-to-base
// term on (β 0.05) and off, each rep on fresh data so only the shared prompt can come from a cache.
// `--estimators k3,k2,full,full+guard` times the KL term once per estimator (full: the exact sum over the
// vocabulary, one more LM-head product per response token; +guard adds the entropy guard at λ 1). Interleaved reps; medians on stdout as one JSON line.
//   node bench/kl-step.ts [--repo DIR] [--model DIR] [--threads N] [--reps N] [--estimators k3,k2,full]
// --repo runs another checkout's engine (e.g. a worktree of the previous main, its addon built there).
import { parseArgs } from 'node:util';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values } = parseArgs({ options: {
  repo: { type: 'string', default: join(import.meta.dirname, '..') },
  model: { type: 'string', default: join(homedir(), '.cache', 'openclaw-rl', 'models', 'stories260k-chat') },
  threads: { type: 'string', default: '1' }, reps: { type: 'string', default: '7' }, estimators: { type: 'string', default: 'k3' },
} });
const repo = resolve(values.repo!);
const load = (p: string) => import(pathToFileURL(join(repo, p)).href);
const { EmbeddedEngine } = await load('src/engine/embedded/engine.ts');
const { ToolCallEnv } = await load('src/env/toolcall.ts');
const { makeTasks } = await load('src/env/arithmetic.ts');
const { headMessages } = await load('src/agent/protocol.ts');

const engine = await EmbeddedEngine.load(values.model!, { threads: Number(values.threads) });
const env = new ToolCallEnv({ python: false });
const tasks = makeTasks('train', 1024);
const V = engine.info.vocabSize as number;
let next = 0;
/** 32 fresh datums: the environment's prompt for the next tasks, a pseudo-random 33-token answer */
async function batch(): Promise<object[]> {
  return Promise.all(Array.from({ length: 32 }, async () => {
    const task = tasks[next++ % tasks.length];
    const reset = await env.reset(task);
    const promptIds = engine.tokenizer.encodeChat(headMessages(reset.system, task.question), { tools: reset.tools });
    const responseIds = Array.from({ length: 33 }, (_, t) => 3 + ((next * 7919 + t * 104729) % (V - 3)));
    return { promptIds, responseIds, behaviourLogprobs: responseIds.map(() => -3), advantages: responseIds.map((_, t) => (next % 2 ? 1 : -1) * (1 + t / 100)), temperature: 1 };
  }));
}
await engine.configureTraining({ rank: 16, alpha: 32, seed: 1 });
await engine.forwardBackward(await batch(), { kind: 'ppo', klCoef: 0.05 }); // warm-up: allocations, first cache entries
// 'off' and one entry per estimator, timed in turn within each rep
const estimators = values.estimators!.split(',');
const ms: Record<string, number[]> = Object.fromEntries(['off', ...estimators].map((k) => [k, []]));
for (let rep = 0; rep < Number(values.reps); rep++) {
  for (const k of Object.keys(ms)) {
    const data = await batch();
    const t0 = performance.now();
    const [estimator, guard] = k.split('+');
    await engine.forwardBackward(data, k === 'off' ? { kind: 'ppo', klCoef: 0 } : { kind: 'ppo', klCoef: 0.05, klEstimator: estimator, entropyGuard: guard ? 1 : 0 });
    ms[k].push(performance.now() - t0);
  }
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
const promptTokens = (await batch()).reduce((a, d) => a + (d as { promptIds: number[] }).promptIds.length, 0);
const medians = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k === 'off' ? 'stepMsKlOff' : `stepMsKl_${k}`, +median(v).toFixed(1)]));
// stepMsKlOn keeps its old meaning (the first estimator, k3 by default) for comparisons with earlier runs
console.log(JSON.stringify({ repo, threads: Number(values.threads), promptTokensPerBatch: promptTokens, ...medians, stepMsKlOn: medians[`stepMsKl_${estimators[0]}`], samplesMs: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v.map((x) => +x.toFixed(0))])) }));
await engine.close();
