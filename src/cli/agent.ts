// `openclaw-rl agent train` and `agent eval`: the general-agent rollout loop over the tool-call and
// terminal environments (src/agent/, src/env/), with the embedded engine and the same store and
// trainer as `serve`.
import { resolve, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { defineCommand, opt, UsageError } from './command.ts';
import { modelDir, modelOption, kernelOption, threadsOption, jsonOption } from './args.ts';
import { TRAINER_DEFAULTS } from '../trainer/loop.ts';
import { KL_ESTIMATOR_OPTION, ENTROPY_GUARD_HELP } from '../trainer/recipe.ts';
import type { EnvPool } from '../env/types.ts';
import type { ModelBudget } from '../env/budget.ts';
import { ENV_NAMES, SANDBOXED_ENVS } from '../env/names.ts';

const envOption = opt.choice(ENV_NAMES, 'which environment', { default: 'toolcall' });
const count = (help: string, d: number) => opt.int(help, { min: 1, default: d });
const urls = opt.custom('env servers to lease environments from (comma-separated URLs); default: an in-process pool', 'URL,URL', (raw, source) => {
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0 || list.some((u) => !/^https?:\/\/[^/\s]+/.test(u))) throw new UsageError(`${source} expects comma-separated http(s) URLs, got '${raw}'`);
  return list;
});

const ROLLOUT_OPTIONS = {
  model: modelOption, kernel: kernelOption, threads: threadsOption,
  env: envOption,
  workers: count('episodes run at once', 4),
  'max-tokens': count('tokens per policy turn', 64),
  'top-p': opt.number('nucleus sampling', { gt: 0, max: 1, default: 1 }),
  'env-servers': urls,
  'no-python': opt.flag('toolcall: offer only the calculator tool, not the sandboxed python interpreter'),
  seed: opt.int('sampling seed', { min: 0, default: 1 }),
  json: jsonOption,
};

/** The served model's context and token count, so the gui and swe environments fit their prompts and observations to it. */
function modelBudget(engine: { info: { contextLength: number }; tokenizer: { encode(text: string, addSpecialTokens?: boolean): number[] } }): ModelBudget {
  return { contextTokens: engine.info.contextLength, countTokens: (text) => engine.tokenizer.encode(text, false).length };
}

async function openPool(env: string, servers: string[] | undefined, capacity: number, python = true, model?: ModelBudget): Promise<{ pool: EnvPool; close: () => Promise<void> }> {
  if (servers) {
    const { EnvRouter } = await import('../env/client.ts');
    return { pool: EnvRouter.over(servers), close: async () => {} };
  }
  const { LocalPool } = await import('../env/pool.ts');
  const { envFactory } = await import('../env/tasks.ts');
  const { sandboxSupport } = await import('../env/sandbox.ts');
  const sb = sandboxSupport();
  if (!sb.ok && SANDBOXED_ENVS.includes(env)) throw new Error(`the ${env} environment needs the sandbox: ${sb.reason}`);
  const pool = new LocalPool(envFactory(env, { python, model }), { capacity, log: (l) => process.stderr.write(l + '\n') });
  return { pool, close: () => pool.shutdown() };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export const agentTrainCommand = defineCommand({
  name: 'agent train',
  summary: 'train the policy on agent environments (tool-call, terminal): parallel episodes, GRPO groups',
  description: `Runs --workers episodes at once against the policy, --group-size episodes per task; each group's
rewards (the environment's outcome, plus --prm-coef × the mean PRM step score with --prm) are normalised
within the group (GRPO), and every policy turn becomes a training sample with its exact sampled ids and
log-probs (tool observations are never trained on). The trainer publishes new versions while rollouts
continue. Tasks: a JSONL file, or builtin:train:N. With --eval-tasks, held-out accuracy is measured before
and after. Everything is recorded in --data-dir (store, episodes.jsonl, checkpoints, the final adapter).`,
  examples: [
    'openclaw-rl agent train --env toolcall --model ~/.cache/openclaw-rl/models/stories260k-chat --workers 8 --group-size 8 --episodes 512 --eval-tasks builtin:heldout:64',
    'openclaw-rl agent train --env terminal --env-servers http://10.0.0.5:18081,http://10.0.0.6:18081 --tasks tasks.jsonl',
  ],
  options: {
    ...ROLLOUT_OPTIONS,
    tasks: opt.string('training tasks: a JSONL file, builtin:train:N, or (toolcall) expressions:train:N, level3:train:N', { default: 'builtin:train:256', placeholder: 'FILE' }),
    curriculum: opt.flag('toolcall: adaptive difficulty — draw tasks of levels 1–5, moving the level to keep the running success rate inside --band (replaces --tasks)'),
    band: opt.custom('the curriculum\'s target band of running success (low,high)', 'LOW,HIGH', (raw, source) => {
      const b = raw.split(',').map(Number);
      if (b.length !== 2 || b.some((x) => !Number.isFinite(x)) || !(b[0] >= 0 && b[1] <= 1 && b[0] < b[1])) throw new UsageError(`${source} expects two rates 0 ≤ low < high ≤ 1, like 0.3,0.7; got '${raw}'`);
      return b as [number, number];
    }, { default: [0.3, 0.7] as [number, number] }),
    'start-level': opt.int('the curriculum\'s first difficulty level', { min: 1, max: 5, default: 1 }),
    'curriculum-window': opt.int('episodes behind the curriculum\'s running success rate', { min: 2, default: 32 }),
    'eval-tasks': opt.string('held-out tasks evaluated before and after (JSONL file, builtin:heldout:N, expressions:heldout:N)', { placeholder: 'FILE' }),
    'eval-samples': count('episodes per held-out task', 1),
    'eval-temperature': opt.number('sampling temperature of the evaluation (0 = greedy)', { min: 0, max: 2, default: 0 }),
    'group-size': opt.int('episodes per task (GRPO group)', { min: 2, default: 4 }),
    episodes: count('training episodes in all (whole groups)', 64),
    temperature: opt.number('sampling temperature of the rollouts', { gt: 0, max: 2, default: 1 }),
    'data-dir': opt.path('store, episodes.jsonl, checkpoints and the final adapter', { default: '.openclaw-rl-agent', placeholder: 'DIR' }),
    'batch-size': count('samples (policy turns) per optimizer step', 16),
    'learning-rate': opt.number('optimizer learning rate', { gt: 0, default: TRAINER_DEFAULTS.learningRate }),
    'kl-coef': opt.number('β of the KL-to-base term in the loss (0 turns it off, and the base forward pass with it)', { min: 0, default: TRAINER_DEFAULTS.klCoef }),
    'kl-estimator': opt.choice(KL_ESTIMATOR_OPTION.choices, KL_ESTIMATOR_OPTION.help, { default: TRAINER_DEFAULTS.klEstimator }),
    'entropy-guard': opt.number(ENTROPY_GUARD_HELP, { min: 0, default: TRAINER_DEFAULTS.entropyGuard }),
    'stale-correction': opt.choice(['decoupled', 'behaviour'] as const, 'samples of older versions: decoupled rescores them under the current weights (an extra forward pass) and weights by the truncated importance ratio; behaviour clips the PPO ratio against their sampling log-probs (no extra pass)', { default: 'decoupled' }),
    'max-minutes': opt.number('stop training after this many minutes of wall clock (rollouts and steps; evaluations not counted): no new episodes, the step in progress finishes', { gt: 0 }),
    'lr-decay': opt.choice(['none', 'linear'] as const, 'learning-rate schedule: linear falls to a tenth of --learning-rate over the run (--max-minutes when given, else --episodes)', { default: 'none' }),
    anchors: opt.int('replay: after each group that trains (one with reward variance), this many base-model answers to plain chat requests, trained with --anchor-advantage on every token, to keep what the model does outside the tasks (0 = none)', { min: 0, default: 0 }),
    'anchor-advantage': opt.number('the advantage on each token of a replayed base answer', { gt: 0, default: 1 }),
    'eval-greedy': opt.flag('also evaluate the held-out tasks greedily (one episode per task), before and after'),
    'max-staleness': opt.int('drop samples this many versions older than the policy (default: none dropped; stale samples are corrected by truncated importance weights)', { min: 0 }),
    'lora-rank': count('LoRA rank', 16),
    'lora-alpha': count('LoRA alpha', 32),
    prm: opt.choice(['none', 'self', 'llm'] as const, 'process reward: judge each tool step (self = the base model, llm = --prm-url)', { default: 'none' }),
    'prm-coef': opt.number('λ in reward = outcome + λ · mean step score', { min: 0, default: 0.5 }),
    'prm-votes': count('judge votes per step', 3),
    'prm-url': opt.string('OpenAI-compatible base URL of the PRM judge', { env: 'OPENCLAW_RL_JUDGE_URL', placeholder: 'URL', nonEmpty: true }),
    'prm-model': opt.string('model id of the PRM judge', { env: 'OPENCLAW_RL_JUDGE_MODEL', placeholder: 'ID', nonEmpty: true }),
    'prm-api-key': opt.string('API key of the PRM judge', { env: 'OPENCLAW_RL_JUDGE_API_KEY', placeholder: 'KEY' }),
    'train-judge': opt.flag('judge consistency training: a judge on its own adapter scores every step (λ = --prm-coef) and is trained, by the same trainer, to agree with the episode outcomes; agreement on the held-out episodes before and after'),
    'judge-model': opt.string('the judge model folder for --train-judge (default: --model)', { placeholder: 'DIR', nonEmpty: true }),
    'judge-votes': opt.int('judge votes per step (one GRPO group) with --train-judge', { min: 2, default: 4 }),
    'judge-learning-rate': opt.number('the judge\'s learning rate', { gt: 0, default: TRAINER_DEFAULTS.learningRate }),
  },
  check: (o) => {
    if (o.prm === 'llm' && (!o['prm-url'] || !o['prm-model'])) throw new UsageError('--prm llm needs --prm-url and --prm-model');
    if (o.curriculum && o.env !== 'toolcall') throw new UsageError('--curriculum works on --env toolcall (its tasks have difficulty levels)');
    if (o['train-judge'] && o.prm !== 'none') throw new UsageError('--train-judge brings its own judge: leave out --prm');
    if (o['train-judge'] && !o['eval-tasks']) throw new UsageError('--train-judge needs --eval-tasks: judge agreement is measured on the held-out episodes');
  },
  run: async (o) => {
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const { Store } = await import('../store/store.ts');
    const { loadTasks } = await import('../env/tasks.ts');
    const { agentTrain } = await import('../agent/train.ts');
    const { agentEval } = await import('../agent/eval.ts');
    const tasks = (() => { try { return loadTasks(o.env, o.tasks); } catch (e) { throw new UsageError(`--tasks: ${(e as Error).message}`); } })();
    const evalTasks = o['eval-tasks'] ? (() => { try { return loadTasks(o.env, o['eval-tasks']!); } catch (e) { throw new UsageError(`--eval-tasks: ${(e as Error).message}`); } })() : null;
    const dataDir = resolve(o['data-dir']);
    const engine = await EmbeddedEngine.load(await modelDir(o.model), { kernel: o.kernel, threads: o.threads });
    const store = new Store(dataDir);
    const { pool, close } = await openPool(o.env, o['env-servers'], o.workers, !o['no-python'], modelBudget(engine));
    const log = (l: string) => process.stderr.write(l + '\n');
    const runId = `agent-${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 6)}`;
    let judgeEngine: import('../engine/embedded/engine.ts').EmbeddedEngine | null = null;
    let judgeStore: import('../store/store.ts').Store | null = null;
    try {
      const heldOutEpisodes: import('../agent/episode.ts').EpisodeResult[] = [];
      const evaluate = async (label: string) => {
        if (!evalTasks) return null;
        const r = await agentEval(engine, null, pool, evalTasks, {
          onEpisode: label === 'before' ? (_d, _t, ep) => { heldOutEpisodes.push(ep); } : undefined,
          workers: o.workers, samples: o['eval-samples'], ks: [1, ...(o['eval-samples'] > 1 ? [o['eval-samples']] : [])], maxTokensPerTurn: o['max-tokens'],
          temperature: o['eval-temperature'], topP: o['top-p'], seed: o.seed, runId: `${runId}-${label}`, allocateTimeoutMs: 600_000,
        });
        log(`agent eval (${label}): accuracy ${pct(r.accuracy)} on ${r.tasks} held-out tasks at T = ${o['eval-temperature']} (${r.failed} failed episodes), ${Object.entries(r.passAtK).map(([k, v]) => `${k} ${pct(v)}`).join(', ')}, tool use ${pct(r.toolUse)}, mean reward ${r.meanReward.toFixed(2)}, ${(r.durationMs / 1000).toFixed(0)} s`);
        return r;
      };
      // greedy: one episode per task (the same every time)
      const evaluateGreedy = async (label: string) => {
        if (!evalTasks || !o['eval-greedy']) return null;
        const r = await agentEval(engine, null, pool, evalTasks, {
          workers: o.workers, samples: 1, ks: [1], maxTokensPerTurn: o['max-tokens'], temperature: 0, topP: 1, seed: o.seed, runId: `${runId}-${label}-greedy`, allocateTimeoutMs: 600_000,
        });
        log(`agent eval (${label}, greedy): accuracy ${pct(r.accuracy)} on ${r.tasks} held-out tasks, tool use ${pct(r.toolUse)}, ${(r.durationMs / 1000).toFixed(0)} s`);
        return r;
      };
      const before = await evaluate('before');
      const greedyBefore = await evaluateGreedy('before');
      let prm = null;
      if (o.prm !== 'none') {
        const { LlmBackend, SelfBackend } = await import('../judge/backends.ts');
        const backend = o.prm === 'llm' ? new LlmBackend({ baseUrl: o['prm-url']!, model: o['prm-model']!, apiKey: o['prm-api-key'] }) : new SelfBackend(engine);
        prm = { backend, coef: o['prm-coef'], judge: { votes: o['prm-votes'], temperature: 0.6, maxTokens: 64 } };
      }
      let source: import('../agent/curriculum.ts').TaskSource | null = null;
      if (o.curriculum) {
        const { Curriculum, curriculumSource } = await import('../agent/curriculum.ts');
        const { makeLeveledTask } = await import('../env/arithmetic.ts');
        const c = new Curriculum({ band: o.band, startLevel: o['start-level'], window: o['curriculum-window'], minEpisodes: Math.max(1, Math.floor(o['curriculum-window'] / 2)) });
        source = curriculumSource(c, (seed, level) => makeLeveledTask('train', seed, level) as never);
      }
      log(`agent train: ${o.env}, ${source ? `curriculum in band ${o.band.join('–')} from level ${o['start-level']}` : `${tasks.length} tasks`}, ${o.episodes} episodes in groups of ${o['group-size']}, ${o.workers} workers — data in ${dataDir}`);
      let judge: { trainer: import('../agent/judge-training.ts').JudgeTrainer; coef: number } | null = null;
      if (o['train-judge']) {
        const { JudgeTrainer } = await import('../agent/judge-training.ts');
        judgeEngine = await EmbeddedEngine.load(await modelDir(o['judge-model'] ?? o.model), { kernel: o.kernel, threads: o.threads });
        judgeStore = new Store(join(dataDir, 'judge'));
        const jt = new JudgeTrainer(judgeEngine, judgeStore, {
          votes: o['judge-votes'], log,
          trainer: { checkpointDir: join(dataDir, 'judge', 'checkpoints'), batchSize: o['batch-size'], learningRate: o['judge-learning-rate'], maxStaleness: o['max-staleness'], lora: { rank: o['lora-rank'], alpha: o['lora-alpha'] } },
        });
        await jt.start();
        judge = { trainer: jt, coef: o['prm-coef'] };
        log(`agent train: judge consistency training on its own adapter, ${o['judge-votes']} votes per step, λ = ${o['prm-coef']}`);
      }
      const summary = await agentTrain(engine, store, pool, source ?? tasks, {
        judge,
        workers: o.workers, groupSize: o['group-size'], episodes: o.episodes, maxTokensPerTurn: o['max-tokens'], temperature: o.temperature, topP: o['top-p'], prm,
        trainer: {
          checkpointDir: join(dataDir, 'checkpoints'), batchSize: o['batch-size'], learningRate: o['learning-rate'], maxStaleness: o['max-staleness'],
          lora: { rank: o['lora-rank'], alpha: o['lora-alpha'] }, klCoef: o['kl-coef'], klEstimator: o['kl-estimator'], entropyGuard: o['entropy-guard'], staleCorrection: o['stale-correction'],
        },
        maxMs: o['max-minutes'] !== undefined ? o['max-minutes'] * 60_000 : undefined, lrDecay: o['lr-decay'],
        anchors: o.anchors > 0 ? { perGroup: o.anchors, advantage: o['anchor-advantage'], maxTokens: 96 } : null,
        maxQueuedSamples: o['batch-size'] * 4, allocateTimeoutMs: 600_000, runId, seed: o.seed, log,
        onProgress: (p) => log(`[agent] ${p.episodes} episodes (${p.failed} failed) · accuracy ${pct(p.recentAccuracy)} recent, ${pct(p.accuracy)} overall${p.level !== undefined ? ` · level ${p.level} (${pct(p.levelSuccess!)} at it)` : ''} · reward ${p.meanReward.toFixed(2)} · version ${p.policyVersion} (step ${p.steps}) · ${p.envStepsPerSecond.toFixed(1)} env steps/s · ${p.tokensPerSecond.toFixed(0)} tok/s · ${(p.elapsedMs / 1000).toFixed(0)} s`),
      });
      await engine.saveAdapter(join(dataDir, 'adapter'), 'published').catch((e) => log(`agent train: adapter not saved: ${(e as Error).message}`));
      let judgeResult = null;
      if (judge && judgeEngine) {
        await judge.trainer.stop();
        await judgeEngine.saveAdapter(join(dataDir, 'judge', 'adapter'), 'published').catch((e) => log(`agent train: judge adapter not saved: ${(e as Error).message}`));
        const before = await judge.trainer.agreement(heldOutEpisodes, 'base');
        const after = await judge.trainer.agreement(heldOutEpisodes, 'published');
        judgeResult = { votes: judge.trainer.counts, steps: judge.trainer.trainer.step, version: judge.trainer.trainer.version, agreementBefore: before, agreementAfter: after };
        const perClass = (g: typeof before) => `+1 on ${g.successAgree}/${g.successSteps} successful, −1 on ${g.failureAgree}/${g.failureSteps} failed`;
        log(`agent train: judge–outcome agreement on ${after.steps} held-out steps (${after.successSteps} from successful episodes): ${pct(before.rate)} → ${pct(after.rate)}, balanced ${pct(before.balanced)} → ${pct(after.balanced)} (${perClass(before)} → ${perClass(after)}); unreadable verdicts ${before.invalid} → ${after.invalid}; ${judge.trainer.trainer.step} judge steps`);
      }
      log(`agent train: ${summary.stoppedBy === 'time' ? `stopped by --max-minutes after` : 'done in'} ${(summary.elapsedMs / 1000).toFixed(0)} s of wall clock and ${summary.cpuSeconds.toFixed(0)} CPU seconds (evaluations not included)`);
      const after = await evaluate('after');
      const greedyAfter = await evaluateGreedy('after');
      // what the gain cost: KL(policy ‖ base) on the held-out task prompts and on plain story requests, and story fluency
      const { klToBase, chatPrompts, storyFluency, STORY_PROMPTS } = await import('../agent/drift.ts');
      const stories = chatPrompts(engine.tokenizer, STORY_PROMPTS);
      const drift = summary.steps > 0 ? {
        heldOutTasks: after ? await klToBase(engine, after.firstPrompts.slice(0, 32), { samples: 2, maxTokens: o['max-tokens'], seed: o.seed }) : null,
        storyPrompts: await klToBase(engine, stories, { samples: 8, maxTokens: 96, seed: o.seed }),
      } : null;
      if (drift) log(`agent train: KL(policy ‖ base) per token ${drift.heldOutTasks?.toFixed(4) ?? '–'} on held-out task prompts, ${drift.storyPrompts.toFixed(4)} on story requests`);
      const fluency = summary.steps > 0 && o.env === 'toolcall' ? await storyFluency(engine, stories, { samples: 8, maxTokens: 96, seed: o.seed }) : null;
      if (fluency) log(`agent train: fluent stories ${pct(fluency.policy)} (base ${pct(fluency.base)}) of ${fluency.samples}; mean log-likelihood under the base ${fluency.policyMeanLL.toFixed(3)} (base's own ${fluency.baseMeanLL.toFixed(3)}); e.g. ${JSON.stringify(fluency.examples[0]?.slice(0, 160))}`);
      const strip = (r: typeof before) => r && (({ firstPrompts: _fp, ...rest }) => rest)(r);
      const curriculum = source && 'log' in source ? { band: o.band, steps: source.log as import('../agent/curriculum.ts').CurriculumStep[] } : null;
      const out = {
        env: o.env, runId, ...summary, curriculum, judge: judgeResult, evalBefore: strip(before), evalAfter: strip(after),
        evalGreedyBefore: strip(greedyBefore), evalGreedyAfter: strip(greedyAfter), klToBase: drift, storyFluency: fluency, dataDir,
      };
      if (o.json) process.stdout.write(JSON.stringify(out) + '\n');
      else process.stdout.write(`trained ${summary.episodes} episodes (${summary.failed} failed), ${summary.samples} samples, ${summary.steps} steps → version ${summary.policyVersion} in ${(summary.elapsedMs / 60_000).toFixed(1)} min; training accuracy ${pct(summary.accuracy)}${before && after ? `; held-out accuracy ${pct(before.accuracy)} → ${pct(after.accuracy)}` : ''}${greedyBefore && greedyAfter ? ` (greedy ${pct(greedyBefore.accuracy)} → ${pct(greedyAfter.accuracy)})` : ''}\n`);
    } finally {
      await close();
      await engine.close();
      store.close();
      await judgeEngine?.close();
      judgeStore?.close();
    }
  },
});

export const agentEvalCommand = defineCommand({
  name: 'agent eval',
  summary: 'evaluate the policy on held-out agent tasks: accuracy and pass@k',
  description: `Runs --samples episodes per task (--workers at once) and reports the share of successful episodes and
unbiased pass@k. --adapter evaluates a trained LoRA adapter (e.g. DATA_DIR/adapter from agent train).`,
  options: {
    ...ROLLOUT_OPTIONS,
    tasks: opt.string('tasks: a JSONL file or builtin:heldout:N', { default: 'builtin:heldout:64', placeholder: 'FILE' }),
    adapter: opt.dir('a PEFT LoRA adapter folder to evaluate on top of the model', { contains: 'adapter_config.json' }),
    samples: count('episodes per task', 1),
    k: opt.custom('pass@k values (comma-separated, each ≤ --samples)', 'K,K', (raw, source) => {
      const ks = raw.split(',').map(Number);
      if (ks.some((k) => !Number.isInteger(k) || k < 1)) throw new UsageError(`${source} expects comma-separated positive integers, got '${raw}'`);
      return ks;
    }),
    temperature: opt.number('sampling temperature (0 = greedy)', { min: 0, max: 2, default: 0 }),
  },
  check: (o) => {
    if (o.k && o.k.some((k) => k > o.samples)) throw new UsageError(`--k values must be ≤ --samples (${o.samples})`);
  },
  run: async (o) => {
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const { loadTasks } = await import('../env/tasks.ts');
    const { agentEval } = await import('../agent/eval.ts');
    const tasks = (() => { try { return loadTasks(o.env, o.tasks); } catch (e) { throw new UsageError(`--tasks: ${(e as Error).message}`); } })();
    const engine = await EmbeddedEngine.load(await modelDir(o.model), { kernel: o.kernel, threads: o.threads });
    const { pool, close } = await openPool(o.env, o['env-servers'], o.workers, !o['no-python'], modelBudget(engine));
    try {
      if (o.adapter) await engine.publish(await engine.loadAdapter(o.adapter));
      const r = await agentEval(engine, null, pool, tasks, {
        workers: o.workers, samples: o.samples, ks: o.k ?? [1], maxTokensPerTurn: o['max-tokens'], temperature: o.temperature, topP: o['top-p'],
        seed: o.seed, runId: `eval-${randomUUID().slice(0, 8)}`, allocateTimeoutMs: 600_000,
        onEpisode: (done, total) => { if (!o.json && (done % 10 === 0 || done === total)) process.stderr.write(`\r[agent eval] ${done}/${total} episodes`); },
      });
      if (!o.json) process.stderr.write('\n');
      const { firstPrompts: _fp, ...shown } = r;
      if (o.json) process.stdout.write(JSON.stringify({ env: o.env, ...shown }) + '\n');
      else process.stdout.write(`${o.env}: accuracy ${pct(r.accuracy)} over ${r.episodes - r.failed} episodes of ${r.tasks} tasks (${r.failed} failed); ${Object.entries(r.passAtK).map(([k, v]) => `${k} ${pct(v)}`).join(', ')}; tool use ${pct(r.toolUse)}, ${r.meanToolCalls.toFixed(2)} calls/episode; ${r.envStepsPerSecond.toFixed(1)} env steps/s, ${r.tokensPerSecond.toFixed(0)} tok/s\n`);
    } finally {
      await close();
      await engine.close();
    }
  },
});

export const benchAgentsCommand = defineCommand({
  name: 'bench agents',
  summary: 'agent rollout throughput: env steps/s and tokens/s with N workers, in-process pool vs env server',
  options: {
    model: modelOption, kernel: kernelOption, threads: threadsOption, env: envOption,
    workers: opt.custom('worker counts to measure (comma-separated)', 'N,N', (raw, source) => {
      const ns = raw.split(',').map(Number);
      if (ns.length === 0 || ns.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) throw new UsageError(`${source} expects comma-separated integers from 1 to 64, got '${raw}'`);
      return ns;
    }, { default: [1, 4, 16] }),
    episodes: count('episodes per measurement', 32),
    'max-tokens': count('tokens per policy turn', 32),
    pool: opt.choice(['local', 'http', 'both'] as const, 'which pools to measure', { default: 'both' }),
    repeats: count('measurements per setting (the median is reported)', 3),
    tasks: opt.string('the tasks to play: a JSONL file or a task-set spec as agent train --tasks (default: builtin:train)', { placeholder: 'SPEC' }),
    'no-python': opt.flag('toolcall: offer only the calculator tool, not the sandboxed python interpreter'),
    json: jsonOption,
  },
  run: async (o) => {
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const { benchAgents } = await import('../bench/agents.ts');
    if (o.tasks) {
      const { loadTasks } = await import('../env/tasks.ts');
      try { loadTasks(o.env, o.tasks); } catch (e) { throw new UsageError(`--tasks: ${(e as Error).message}`); }
    }
    const engine = await EmbeddedEngine.load(await modelDir(o.model), { kernel: o.kernel, threads: o.threads });
    try {
      const rows = await benchAgents(engine, {
        env: o.env, workers: o.workers, episodes: o.episodes, maxTokens: o['max-tokens'], repeats: o.repeats,
        pools: o.pool === 'both' ? ['local', 'http'] : [o.pool], log: (l) => process.stderr.write(l + '\n'), tasks: o.tasks, python: !o['no-python'],
      });
      if (o.json) process.stdout.write(JSON.stringify({ model: engine.info.modelId, threads: engine.info.threads, rows }) + '\n');
    } finally { await engine.close(); }
  },
});

export const benchGuiCommand = defineCommand({
  name: 'bench gui',
  summary: 'GUI environment: memory and time of N parallel browser episodes (contexts of one Chromium vs N processes)',
  description: `Plays N generated GUI tasks at once with their scripted correct actions in headless Chromium, as N
contexts of one shared browser (what the GUI environment does) and/or as N separate browser processes, and
reports the extra memory of the browser process trees at the peak (PSS: shared pages split among processes;
and RSS) over the idle baseline. --screenshots DIR also writes one finished episode of each task page as a PNG.`,
  options: {
    episodes: count('episodes at once', 8),
    mode: opt.choice(['contexts', 'processes', 'both'] as const, 'one Chromium with a context per episode, a Chromium per episode, or both', { default: 'both' }),
    screenshots: opt.path('write a screenshot of each task page here', { placeholder: 'DIR' }),
    json: jsonOption,
  },
  run: async (o) => {
    const { benchGui } = await import('../bench/gui.ts');
    const rows = await benchGui({ episodes: o.episodes, modes: o.mode === 'both' ? ['contexts', 'processes'] : [o.mode], screenshotsDir: o.screenshots, log: (l) => process.stderr.write(l + '\n') });
    if (o.json) process.stdout.write(JSON.stringify({ rows }) + '\n');
  },
});
