// `openclaw-rl serve`: the embedded engine behind the OpenAI-compatible API, recording every turn.
import { parseArgs } from 'node:util';
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { Store } from '../store/store.ts';
import { startServer } from '../api/server.ts';
import { UsageError, num, modelDir } from './args.ts';
import { createJudge, JUDGE_DEFAULTS, type JudgeConfig } from '../judge/config.ts';
import { JudgeLoop } from '../judge/loop.ts';
import { TrainerLoop, TRAINER_DEFAULTS } from '../trainer/loop.ts';
import { Evaluator, loadEvalFile, EVAL_DEFAULTS } from '../trainer/evaluation.ts';
import { Tracking } from '../dashboard/tracking.ts';

/**
 * Options from a JSON config file (`--config FILE` or $OPENCLAW_RL_CONFIG): an object whose keys are
 * the long flag names ({"method": "binary", "batch-size": 8, "judge": "llm", …}). Flags on the command
 * line win over the file, and the file over environment variables and defaults.
 */
function configArgs(argv: string[]): string[] {
  const i = argv.indexOf('--config');
  const file = i >= 0 ? argv[i + 1] : process.env.OPENCLAW_RL_CONFIG;
  if (!file) return [];
  if (!existsSync(file)) throw new UsageError(`config file not found: ${file}`);
  let raw: unknown;
  try { raw = JSON.parse(readFileSync(file, 'utf8')); } catch (e) { throw new UsageError(`config file ${file} is not valid JSON: ${(e as Error).message}`); }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new UsageError(`config file ${file} must hold a JSON object of option names and values`);
  const out: string[] = [];
  for (const [k, v] of Object.entries(raw)) {
    if (k === 'config') continue;
    if (v === true) out.push(`--${k}`);
    else if (v !== false && v !== null) out.push(`--${k}`, String(v));
  }
  return out;
}

export async function serveCommand(argv: string[]): Promise<void> {
  const withoutConfig = argv.filter((_, i) => argv[i] !== '--config' && argv[i - 1] !== '--config');
  const { values: fromFile } = parseArgs({ args: configArgs(argv), strict: true, options: SERVE_OPTIONS });
  const { values: fromArgs } = parseArgs({ args: withoutConfig, strict: true, options: SERVE_OPTIONS });
  const o = { ...fromFile, ...Object.fromEntries(Object.entries(fromArgs).filter(([k, v]) => v !== undefined && !(v === false && k in fromFile))) } as typeof fromArgs;
  return serveWith(o);
}

const SERVE_OPTIONS = {
  model: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' }, 'api-key': { type: 'string' },
  'data-dir': { type: 'string' }, 'served-model-name': { type: 'string' }, 'max-concurrent': { type: 'string' },
  'max-body-bytes': { type: 'string' }, 'session-idle-seconds': { type: 'string' }, 'default-max-tokens': { type: 'string' },
  'allow-insecure-bind': { type: 'boolean', default: false }, 'no-redact': { type: 'boolean', default: false },
  'retention-days': { type: 'string' }, kernel: { type: 'string' }, threads: { type: 'string' },
  judge: { type: 'string' }, 'judge-url': { type: 'string' }, 'judge-model': { type: 'string' }, 'judge-api-key': { type: 'string' },
  'judge-votes': { type: 'string' }, 'judge-temperature': { type: 'string' }, 'judge-max-tokens': { type: 'string' },
  'judge-timeout-seconds': { type: 'string' }, 'judge-concurrency': { type: 'string' }, 'judge-context': { type: 'boolean', default: false },
  'no-hints': { type: 'boolean', default: false },
  'no-train': { type: 'boolean', default: false }, method: { type: 'string' }, 'batch-size': { type: 'string' }, 'learning-rate': { type: 'string' },
  'max-staleness': { type: 'string' }, 'kl-coef': { type: 'string' }, 'opd-teacher': { type: 'string' }, 'reward-baseline': { type: 'string' },
  'lora-rank': { type: 'string' }, 'lora-alpha': { type: 'string' }, 'checkpoint-every': { type: 'string' }, overlong: { type: 'string' },
  'context-overflow': { type: 'string' },
  'eval-file': { type: 'string' }, 'eval-every': { type: 'string' }, 'eval-samples': { type: 'string' }, 'eval-max-tokens': { type: 'string' },
  tensorboard: { type: 'string' }, 'keep-versions': { type: 'string' },
} as const;

async function serveWith(o: { [K in keyof typeof SERVE_OPTIONS]?: (typeof SERVE_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string }): Promise<void> {
  const dir = await modelDir(o.model);
  const int = (v: string | undefined, flag: string, d: number) => num(v, flag, d, (x) => Number.isInteger(x) && x >= 0);
  const port = int(o.port ?? process.env.PORT, '--port', 30000);
  const host = o.host ?? process.env.HOST ?? '127.0.0.1';
  const apiKey = o['api-key'] ?? process.env.OPENCLAW_RL_API_KEY ?? process.env.SGLANG_API_KEY ?? undefined;
  if (o.kernel && o.kernel !== 'wasm' && o.kernel !== 'ts') throw new UsageError(`--kernel must be 'wasm' or 'ts'`);
  const dataDir = resolve(o['data-dir'] ?? process.env.OPENCLAW_RL_DATA_DIR ?? '.openclaw-rl');
  const judgeKind = o.judge ?? process.env.OPENCLAW_RL_JUDGE ?? JUDGE_DEFAULTS.kind;
  if (!['none', 'lexical', 'self', 'llm'].includes(judgeKind)) throw new UsageError(`--judge must be none, lexical, self or llm (got '${judgeKind}')`);
  const judgeConfig: JudgeConfig = {
    ...JUDGE_DEFAULTS, kind: judgeKind as JudgeConfig['kind'],
    url: o['judge-url'] ?? process.env.OPENCLAW_RL_JUDGE_URL, model: o['judge-model'] ?? process.env.OPENCLAW_RL_JUDGE_MODEL,
    apiKey: o['judge-api-key'] ?? process.env.OPENCLAW_RL_JUDGE_API_KEY,
    votes: int(o['judge-votes'], '--judge-votes', JUDGE_DEFAULTS.votes), maxTokens: int(o['judge-max-tokens'], '--judge-max-tokens', JUDGE_DEFAULTS.maxTokens),
    temperature: num(o['judge-temperature'], '--judge-temperature', JUDGE_DEFAULTS.temperature, (x) => x >= 0 && x <= 2),
    timeoutMs: int(o['judge-timeout-seconds'], '--judge-timeout-seconds', JUDGE_DEFAULTS.timeoutMs / 1000) * 1000,
    concurrency: int(o['judge-concurrency'], '--judge-concurrency', JUDGE_DEFAULTS.concurrency),
  };
  if (judgeConfig.kind === 'llm' && (!judgeConfig.url || !judgeConfig.model)) throw new UsageError('--judge llm needs --judge-url (an OpenAI-compatible base URL) and --judge-model');

  const contextOverflow = o['context-overflow'] ?? 'error';
  if (contextOverflow !== 'error' && contextOverflow !== 'truncate') throw new UsageError(`--context-overflow must be error or truncate`);
  const evalItems = o['eval-file'] ? loadEvalFile(o['eval-file']) : null;
  const evalEvery = int(o['eval-every'], '--eval-every', EVAL_DEFAULTS.every);
  if (evalEvery < 1) throw new UsageError('--eval-every must be at least 1');
  const keepVersions = int(o['keep-versions'], '--keep-versions', 20);
  process.stderr.write(`loading ${dir}…\n`);
  const engine = await EmbeddedEngine.load(dir, { kernel: o.kernel as 'wasm' | 'ts' | undefined, threads: o.threads ? int(o.threads, '--threads', 2) : undefined });
  const store = new Store(dataDir, { redact: !o['no-redact'], retentionDays: o['retention-days'] ? int(o['retention-days'], '--retention-days', 0) : undefined });
  if (store.recoveredAborted > 0) process.stderr.write(`marked ${store.recoveredAborted} turn(s) interrupted by the last shutdown as aborted\n`);
  const modelId = o['served-model-name'] ?? engine.info.modelId;
  // metrics.jsonl (+ TensorBoard), the version archive, held-out evaluation and the dashboard
  const tracking = new Tracking({ store, engine, dataDir, modelId, judgeKind: judgeConfig.kind, learning: !o['no-train'], tensorboard: o.tensorboard, keepVersions });
  let trainer: TrainerLoop | null = null;
  let server;
  try {
    server = await startServer({
      engine, store, modelId, host, port, apiKey, allowInsecureBind: o['allow-insecure-bind'],
      maxConcurrent: int(o['max-concurrent'], '--max-concurrent', 16), maxBodyBytes: int(o['max-body-bytes'], '--max-body-bytes', 8 * 2 ** 20),
      sessionIdleMs: int(o['session-idle-seconds'], '--session-idle-seconds', 1800) * 1000, defaultMaxTokens: int(o['default-max-tokens'], '--default-max-tokens', 1024),
      contextOverflow,
      status: () => ({
        judge: judgeConfig.kind, trainer: trainer?.status() ?? null,
        // how sessions were identified: "header" means the OpenClaw plugin is doing its job
        sessionSources: Object.fromEntries((store.sql('SELECT id_source, COUNT(*) AS n FROM sessions GROUP BY id_source').all() as { id_source: string; n: number }[]).map((r) => [r.id_source, r.n])),
        turnTypes: Object.fromEntries((store.sql('SELECT turn_type || \'/\' || type_source AS k, COUNT(*) AS n FROM turns GROUP BY k').all() as { k: string; n: number }[]).map((r) => [r.k, r.n])),
      }), extraMetrics: () => trainer?.metrics() ?? '', dashboard: tracking.dashboard, publishedVersion: () => tracking.publishedVersion(),
    });
  } catch (e) {
    await engine.close(); store.close();
    throw e;
  }
  const method = o.method ?? process.env.OPENCLAW_RL_METHOD ?? TRAINER_DEFAULTS.method;
  if (!['binary', 'opd', 'combine'].includes(method)) throw new UsageError(`--method must be binary, opd or combine (got '${method}')`);
  const opdTeacher = o['opd-teacher'] ?? TRAINER_DEFAULTS.opdTeacher;
  if (opdTeacher !== 'base' && opdTeacher !== 'policy') throw new UsageError(`--opd-teacher must be base or policy`);
  const baselineOpt = o['reward-baseline'] ?? TRAINER_DEFAULTS.rewardBaseline;
  if (baselineOpt !== 'batch' && baselineOpt !== 'group' && baselineOpt !== 'none') throw new UsageError(`--reward-baseline must be batch, group or none`);
  let overlong: { lMax: number; lCache: number } | null = null;
  if (o.overlong) {
    const m = /^(\d+),(\d+)$/.exec(o.overlong);
    if (!m || Number(m[2]) > Number(m[1])) throw new UsageError(`--overlong expects L_MAX,L_CACHE (e.g. 1000,200), got '${o.overlong}'`);
    overlong = { lMax: Number(m[1]), lCache: Number(m[2]) };
  }
  trainer = o['no-train'] ? null : new TrainerLoop(store, engine, {
    method: method as 'binary', opdTeacher, rewardBaseline: baselineOpt, overlong, checkpointDir: resolve(dataDir, 'checkpoints'),
    batchSize: int(o['batch-size'], '--batch-size', TRAINER_DEFAULTS.batchSize), maxStaleness: int(o['max-staleness'], '--max-staleness', TRAINER_DEFAULTS.maxStaleness),
    learningRate: num(o['learning-rate'], '--learning-rate', TRAINER_DEFAULTS.learningRate, (x) => x > 0), klCoef: num(o['kl-coef'], '--kl-coef', 0, (x) => x >= 0),
    lora: { rank: int(o['lora-rank'], '--lora-rank', 16), alpha: int(o['lora-alpha'], '--lora-alpha', 32) },
    checkpointEvery: int(o['checkpoint-every'], '--checkpoint-every', TRAINER_DEFAULTS.checkpointEvery), log: (l) => process.stderr.write(l + '\n'),
    onStep: tracking.onStep,
  });
  await trainer?.init();
  const judge = createJudge(judgeConfig, engine);
  const evaluator = !evalItems ? null : new Evaluator(engine, judge, evalItems, {
      every: evalEvery, samples: int(o['eval-samples'], '--eval-samples', EVAL_DEFAULTS.samples), maxTokens: int(o['eval-max-tokens'], '--eval-max-tokens', EVAL_DEFAULTS.maxTokens),
      log: (l) => process.stderr.write(l + '\n'),
  }, (line) => tracking.metricsLog.eval(line));
  tracking.attach(trainer, evaluator);
  evaluator?.schedule(trainer?.step ?? 0); // the starting point of the curve
  const judgeLoop = judge ? new JudgeLoop(store, judge, { hints: !o['no-hints'], includeContext: o['judge-context'], concurrency: judgeConfig.concurrency, log: (l) => process.stderr.write(l + '\n') }) : null;
  judgeLoop?.start();
  trainer?.start();
  process.stderr.write(`openclaw-rl: serving '${modelId}' (${engine.info.modelType}, ${engine.info.kernel} × ${engine.info.threads}) at ${server.url}/v1 (dashboard: ${server.url}/) — data in ${dataDir}${apiKey ? ', API key required' : ''}, judge: ${judgeConfig.kind}, learning: ${trainer ? `${method} (version ${trainer.version})` : 'off'}\n`);
  await new Promise<void>((resolveStop) => {
    const stop = async (signal: string) => {
      process.stderr.write(`openclaw-rl: ${signal}, shutting down…\n`);
      await server!.close();
      await evaluator?.close();
      await judgeLoop?.stop();
      await trainer?.stop();
      await engine.close();
      tracking.close();
      store.close();
      resolveStop();
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}
