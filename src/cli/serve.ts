// `openclaw-rl serve`: the embedded engine behind the OpenAI-compatible API, recording every turn.
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { defineCommand, opt, UsageError, type Values } from './command.ts';
import { parseOrigins } from '../api/cors.ts';
import { modelDir, modelOption, kernelOption, threadsOption, defaultModelId, weightsDtypeOption, kvDtypeOption } from './args.ts';
import { JUDGE_DEFAULTS, SELF_JUDGE_VOTES, NO_HINT_RULES_HELP, defaultVotes, type JudgeConfig } from '../judge/config.ts';
import { TRAINER_DEFAULTS } from '../trainer/loop.ts';
import { RECIPE, recipeFor, klCoefOf, opdWeightOf, settleOf, leavesToModel, MODEL_AWARE_DEFAULT, KL_ESTIMATOR_OPTION, REWARD_BASELINE_OPTION, REWARD_KL_COEF_HELP, NO_DISTILL_UNTIL_MET_HELP, rewardKlCoefOf, distillUntilMetOf, ENTROPY_GUARD_HELP, LOOP_GUARD_HELP, LIKELIHOOD_GUARD_HELP, REPEAT_GUARD_HELP, OPD_WEIGHT_HELP, STALE_DISTILL_HELP, DISTILL_UNTIL_MET_HELP, DISTILL_FADE_HELP, SETTLE_HELP, TAIL_GUARD_HELP, KL_BUDGET_HELP, CANARY_BUDGET_HELP, LOOP_UNLIKELIHOOD_HELP, ANCHOR_ANSWERS_HELP, IMPORTANCE_CAP_HELP } from '../trainer/recipe.ts';
import { LOOP_GUARDS } from '../learn/loops.ts';
import { STALE_DISTILL_MODES } from '../learn/staleness.ts';
import { learningRateProblem } from '../learn/weights-guard.ts';
import { TrainingPace, MAX_LAG_HELP, SERVE_MAX_LAG } from '../trainer/pace.ts';
import type { Store as StoreType } from '../store/store.ts';

const judgeKinds = ['none', 'lexical', 'self', 'llm'] as const;
const count = (help: string, d: number) => opt.int(help, { min: 1, default: d });

const SERVE_OPTIONS = {
  model: modelOption,
  host: opt.string('address to listen on (a non-loopback address needs an API key or --allow-insecure-bind)', { default: '127.0.0.1', env: 'HOST', placeholder: 'ADDR', nonEmpty: true }),
  port: opt.port('port to listen on', { default: 30000, env: 'PORT', allowZero: true }),
  'api-key-file': opt.path('file whose first line is the bearer key clients must send (or set OPENCLAW_RL_API_KEY / SGLANG_API_KEY; a key on the command line is refused: ps shows it)', { env: 'OPENCLAW_RL_API_KEY_FILE', placeholder: 'FILE' }),
  'api-key': opt.custom('not accepted: other local users can read command lines (ps); use OPENCLAW_RL_API_KEY or --api-key-file', 'KEY', () => {
    throw new UsageError('--api-key is not accepted: other local users can read command lines (ps). Put the key in OPENCLAW_RL_API_KEY, or in a file given with --api-key-file');
  }, { hidden: true }),
  'data-dir': opt.path('where turns, the store and checkpoints live', { default: '.openclaw-rl', env: 'OPENCLAW_RL_DATA_DIR', placeholder: 'DIR' }),
  'served-model-name': opt.string('the model id clients ask for', { defaultText: "the model folder's name, or the Hugging Face id", placeholder: 'ID', nonEmpty: true }),
  'max-concurrent': count('requests served at once; more wait in the admission queue', 16),
  'queue-wait-seconds': opt.number('how long a request beyond --max-concurrent may wait for a slot before a 429 (0: no queue)', { min: 0, max: 600, default: 10 }),
  'max-body-bytes': count('largest request body', 8 * 2 ** 20),
  'session-idle-seconds': count('a session without requests this long is closed', 1800),
  'default-max-tokens': count('max_tokens when a request gives none', 1024),
  'cors-origin': opt.custom('browser origins allowed to call the API, comma-separated (* for any); CORS is off without it', 'ORIGINS', corsOrigins,
    { env: 'OPENCLAW_RL_CORS_ORIGIN' }),
  'allow-insecure-bind': opt.flag('allow a non-loopback --host without an API key'),
  redact: opt.choice(['off', 'logs', 'all'], 'what is redacted: all = logs, exports and the store (token ids encrypted with --key-file); logs = logs and exports only', { default: 'all', env: 'OPENCLAW_RL_REDACT' }),
  'key-file': opt.path('key for the token ids stored encrypted (--redact all); keep it outside the data folder', { defaultText: '<data-dir>.key', env: 'OPENCLAW_RL_KEY_FILE', placeholder: 'FILE' }),
  'no-redact': opt.flag('the same as --redact off'),
  'retention-days': opt.int('delete turns older than this many days', { min: 1 }),
  kernel: kernelOption,
  'weights-dtype': weightsDtypeOption,
  threads: threadsOption,
  judge: opt.choice(judgeKinds, 'how the next message becomes a reward', { defaultText: MODEL_AWARE_DEFAULT.judge, env: 'OPENCLAW_RL_JUDGE' }),
  'judge-url': opt.string('OpenAI-compatible base URL of the LLM judge', { env: 'OPENCLAW_RL_JUDGE_URL', placeholder: 'URL', nonEmpty: true }),
  'judge-model': opt.string('model id of the LLM judge', { env: 'OPENCLAW_RL_JUDGE_MODEL', placeholder: 'ID', nonEmpty: true }),
  'judge-api-key': opt.string('API key of the LLM judge', { env: 'OPENCLAW_RL_JUDGE_API_KEY', placeholder: 'KEY' }),
  'judge-votes': opt.int('judge votes per turn', { min: 1, defaultText: `${SELF_JUDGE_VOTES} for the self judge, else ${JUDGE_DEFAULTS.votes}` }),
  'judge-temperature': opt.number('judge sampling temperature', { min: 0, max: 2, default: JUDGE_DEFAULTS.temperature }),
  'judge-max-tokens': count('judge answer length', JUDGE_DEFAULTS.maxTokens),
  'judge-timeout-seconds': count('timeout of one judge request', JUDGE_DEFAULTS.timeoutMs / 1000),
  'judge-concurrency': count('judge requests at once', JUDGE_DEFAULTS.concurrency),
  'judge-context': opt.flag('show the judge the earlier conversation too'),
  'no-hints': opt.flag('do not ask the judge for hints (OPD)'),
  'no-judge-hint-rules': opt.flag(NO_HINT_RULES_HELP),
  'no-train': opt.flag('serve and record only'),
  method: opt.choice(['binary', 'opd', 'combine'], 'learning method', { defaultText: MODEL_AWARE_DEFAULT.method, env: 'OPENCLAW_RL_METHOD' }),
  'batch-size': count('samples per optimizer step', TRAINER_DEFAULTS.batchSize),
  'learning-rate': opt.number('optimizer learning rate (at most 0.1: larger steps destroy the weights)', { gt: 0, defaultText: MODEL_AWARE_DEFAULT.learningRate }),
  'max-lag': opt.custom(MAX_LAG_HELP, 'BATCHES', maxLagOf, { default: SERVE_MAX_LAG as number | null, env: 'OPENCLAW_RL_MAX_LAG' }),
  'max-lag-wait-seconds': opt.number('the longest a turn waits for the trainer under --max-lag; a backlog not cleared in this time (after a judge outage, say) lets every turn through until the trainer has caught up', { min: 1, max: 600, default: 30 }),
  'max-staleness': opt.int('drop samples this many versions older than the policy (default: none dropped; stale samples are corrected by truncated importance weights)', { min: 0 }),
  'importance-cap': opt.number(IMPORTANCE_CAP_HELP, { min: 1, default: TRAINER_DEFAULTS.importanceCap }),
  'stale-distill': opt.choice(STALE_DISTILL_MODES, STALE_DISTILL_HELP, { default: TRAINER_DEFAULTS.staleDistill }),
  'distill-until-met': opt.flag(`${DISTILL_UNTIL_MET_HELP} (default: ${MODEL_AWARE_DEFAULT.distillUntilMet})`),
  'no-distill-until-met': opt.flag(NO_DISTILL_UNTIL_MET_HELP),
  'kl-budget': opt.number(KL_BUDGET_HELP, { gt: 0 }),
  'canary-budget': opt.number(CANARY_BUDGET_HELP, { min: 0, default: RECIPE.canaryBudget }),
  'loop-unlikelihood': opt.number(LOOP_UNLIKELIHOOD_HELP, { min: 0, default: RECIPE.loopUnlikelihood }),
  'distill-fade': opt.number(DISTILL_FADE_HELP, { min: 0, max: 1, default: TRAINER_DEFAULTS.distillFade }),
  settle: opt.number(SETTLE_HELP, { min: 0, max: 1, defaultText: MODEL_AWARE_DEFAULT.settle }),
  'tail-guard': opt.number(TAIL_GUARD_HELP, { min: 0, max: 0.5, defaultText: MODEL_AWARE_DEFAULT.tailGuard }),
  'anchor-answers': opt.int(ANCHOR_ANSWERS_HELP, { min: 0, max: 64, defaultText: MODEL_AWARE_DEFAULT.anchorAnswers }),
  'kl-coef': opt.number('β of the KL-to-base penalty in the loss (0 = off)', { min: 0, defaultText: `${MODEL_AWARE_DEFAULT.klCoef} (0 with --engine tinker or --trainer tinker)` }),
  'kl-estimator': opt.choice(KL_ESTIMATOR_OPTION.choices, KL_ESTIMATOR_OPTION.help, { defaultText: MODEL_AWARE_DEFAULT.klEstimator }),
  'entropy-guard': opt.number(ENTROPY_GUARD_HELP, { min: 0, defaultText: `${MODEL_AWARE_DEFAULT.entropyGuard} (0 with --engine tinker or --trainer tinker)` }),
  'opd-teacher': opt.choice(['base', 'policy', 'both'], 'the OPD teacher reading the hint: the base weights, the live policy, or both (top-K OPD: an entry of the set moves only where both push it the same way, by the smaller push)', { defaultText: MODEL_AWARE_DEFAULT.opdTeacher }),
  'loop-guard': opt.choice(LOOP_GUARDS, LOOP_GUARD_HELP, { defaultText: MODEL_AWARE_DEFAULT.loopGuard }),
  'likelihood-guard': opt.choice(LOOP_GUARDS, LIKELIHOOD_GUARD_HELP, { defaultText: MODEL_AWARE_DEFAULT.likelihoodGuard }),
  'repeat-guard': opt.choice(LOOP_GUARDS, REPEAT_GUARD_HELP, { defaultText: MODEL_AWARE_DEFAULT.repeatGuard }),
  'opd-weight': opt.number(OPD_WEIGHT_HELP, { gt: 0, defaultText: MODEL_AWARE_DEFAULT.opdWeight }),
  'opd-mode': opt.choice(['token', 'topk'], 'OPD on the sampled token, or top-K distillation over the student\'s top-4 with up to 3 hints per turn (embedded engine)', { defaultText: MODEL_AWARE_DEFAULT.opdMode }),
  'hint-selection': opt.choice(['sequence_optimal', 'token_optimal', 'shortest'], 'top-K OPD: which of a turn\'s hints teaches', { default: TRAINER_DEFAULTS.topk.selection }),
  'topk-k': opt.int('top-K OPD: entries per position taken from the student\'s old top-K', { min: 1, max: 64, default: TRAINER_DEFAULTS.topk.k }),
  'topk-set': opt.choice(['student', 'union'], 'top-K OPD: the student\'s top-K at each position (upstream), or joined with the teacher\'s top-K, weighted half by each (one more scoring pass)', { default: TRAINER_DEFAULTS.topk.set }),
  'reward-kl-coef': opt.number(REWARD_KL_COEF_HELP, { min: 0, defaultText: MODEL_AWARE_DEFAULT.rewardKlCoef }),
  'reward-baseline': opt.choice(REWARD_BASELINE_OPTION.choices, REWARD_BASELINE_OPTION.help, { defaultText: MODEL_AWARE_DEFAULT.rewardBaseline }),
  'lora-rank': count('LoRA rank', RECIPE.lora.rank),
  'lora-alpha': count('LoRA alpha', RECIPE.lora.alpha),
  hindsight: opt.flag('hindsight answers (on by default): an answer the user approved after correcting an earlier one is also trained as an answer to the corrected request'),
  'no-hindsight': opt.flag('turn hindsight answers off'),
  'negative-weight': opt.number('scale of negative reward terms (0: learn from approved answers only)', { min: 0, max: 1, default: RECIPE.negativeWeight }),
  'keep-neutral': opt.flag('the at-least-one rule: keep a session\'s first judged turn as a zero-advantage sample even when neutral'),
  full: opt.flag('train every weight (full-parameter) instead of a LoRA adapter; checkpoints are then Hugging Face model folders'),
  'checkpoint-every': count('save a checkpoint every N steps', TRAINER_DEFAULTS.checkpointEvery),
  overlong: opt.custom('overlong-response penalty: max length and soft margin in tokens', 'L_MAX,L_CACHE', parseOverlong),
  'log-level': opt.choice(['debug', 'info', 'warn', 'error'], 'the least severe log lines printed', { default: 'info', env: 'OPENCLAW_RL_LOG_LEVEL' }),
  'log-format': opt.choice(['text', 'json'], 'text lines for people, or JSON lines for log collectors', { default: 'text', env: 'OPENCLAW_RL_LOG_FORMAT' }),
  'context-overflow': opt.choice(['error', 'truncate'], 'a prompt longer than the context', { default: 'error' }),
  'prefix-cache-mib': opt.int('memory for cached prompt prefixes (KV reused by later turns, sessions and scoring); 0 turns it off', { min: 0, defaultText: '1024; paged bf16 caches: at least 32K positions (3.5 GiB for Qwen3-0.6B)' }),
  'prefill-chunk': opt.int('largest number of prompt tokens fed per step (decodes of other requests run between chunks)', { min: 1, defaultText: '256' }),
  'kv-memory-mib': opt.int('cap on memory for KV caches; the context shrinks to what fits', { min: 1, defaultText: 'f32: what fits beside the weights in 4 GiB; bf16: the model\'s context plus the prefix cache' }),
  'kv-dtype': kvDtypeOption,
  'eval-file': opt.file('held-out prompts (JSON Lines: {"prompt"|"messages", "criteria"?, "satisfied"?}) evaluated while serving'),
  'eval-every': count('evaluate the held-out prompts after every N published steps', 10),
  'eval-samples': count('answers per held-out prompt', 2),
  'eval-max-tokens': count('answer length in the held-out evaluation', 64),
  tensorboard: opt.path('also write the metrics as TensorBoard event files into this folder', { placeholder: 'DIR' }),
  'keep-versions': count('published versions kept on disk for rollbacks', 20),
  engine: opt.choice(['embedded', 'tinker', 'vllm', 'sglang'], 'what samples: the embedded CPU engine, a Tinker API server (which also trains), or a vLLM / SGLang server (training by --trainer)', { default: 'embedded', env: 'OPENCLAW_RL_ENGINE' }),
  'serving-url': opt.string('base URL of the vLLM (http://HOST:8000/v1) or SGLang (http://HOST:30000) server', { env: 'OPENCLAW_RL_SERVING_URL', placeholder: 'URL', nonEmpty: true }),
  'serving-api-key': opt.string('bearer key of the vLLM / SGLang server', { env: 'OPENCLAW_RL_SERVING_API_KEY', placeholder: 'KEY', nonEmpty: true }),
  'serving-model': opt.string('base model name on the vLLM / SGLang server', { defaultText: 'the one the server lists', placeholder: 'NAME', nonEmpty: true }),
  trainer: opt.choice(['embedded', 'tinker'], 'what trains when --engine is vllm or sglang: the embedded engine on this machine (from --model), or a Tinker server (--tinker-url; versions are downloaded as PEFT adapters)', { default: 'embedded' }),
  'adapter-dir': opt.path('where published versions are written as PEFT adapters for the vLLM / SGLang server to load (a path it can read)', { defaultText: '<data-dir>/serving-adapters', placeholder: 'DIR' }),
  'tinker-url': opt.string('base URL of the Tinker API server (Tinker cloud, SkyRL, or openclaw-rl serve-tinker)', { env: 'TINKER_BASE_URL', placeholder: 'URL', nonEmpty: true }),
  'tinker-api-key': opt.string('Tinker API key (prefer the environment: flags show in ps)', { env: 'TINKER_API_KEY', placeholder: 'KEY', nonEmpty: true }),
  'tinker-base-model': opt.string('base model name on the Tinker server', { defaultText: 'the only model the server lists', placeholder: 'NAME', nonEmpty: true }),
  'tinker-wire': opt.choice(['proto', 'json'], 'forward_backward bodies and results as protobuf (SDK 0.25 and later) or JSON (older servers)', { default: 'proto' }),
  'tinker-loss': opt.choice(['ppo', 'importance_sampling'], 'the Tinker loss the PPO objective is sent as (importance_sampling = unclipped, for servers without ppo)', { default: 'ppo' }),
};

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'serve a model behind the OpenAI-compatible API, record every turn, judge and train in the background',
  description: 'Serve a model behind an OpenAI-compatible API (default http://127.0.0.1:30000/v1), record the conversations ' +
    'it serves, turn the next message into a reward or hint (the judge) and train a LoRA adapter in the background, ' +
    'serving each new version. Checkpoints land in <data-dir>/checkpoints (latest/ is a PEFT adapter folder).',
  configFile: { env: 'OPENCLAW_RL_CONFIG' },
  options: SERVE_OPTIONS,
  check: (o) => {
    if (o.judge === 'llm' && (!o['judge-url'] || !o['judge-model'])) throw new UsageError('--judge llm needs --judge-url (an OpenAI-compatible base URL) and --judge-model');
    if (o['distill-until-met'] && o['no-distill-until-met']) throw new UsageError('--distill-until-met and --no-distill-until-met contradict each other: give one');
    const lr = o['learning-rate'] === undefined ? null : learningRateProblem(o['learning-rate']);
    if (lr) throw new UsageError(`--learning-rate: ${lr}`);
    if (o.engine === 'tinker' && !o['tinker-url']) throw new UsageError('--engine tinker needs --tinker-url (or TINKER_BASE_URL)');
    if (o.full && o.engine !== 'embedded') throw new UsageError(`--full needs --engine embedded: --engine ${o.engine} trains and serves LoRA adapters only`);
    if ((o.engine === 'vllm' || o.engine === 'sglang') && !o['serving-url']) throw new UsageError(`--engine ${o.engine} needs --serving-url (the server's base URL)`);
    if (o.engine === 'tinker' && (o['kl-coef'] ?? 0) > 0) throw new UsageError('--kl-coef needs the embedded engine: the Tinker API has no KL-to-base loss term');
    if (o.engine === 'tinker' && (o['reward-kl-coef'] ?? 0) > 0) throw new UsageError('--reward-kl-coef needs the embedded engine: the Tinker API has no KL-to-base loss term');
    if (o.engine === 'tinker' && (o['entropy-guard'] ?? 0) > 0) throw new UsageError('--entropy-guard needs the embedded engine: the Tinker API has no such loss term');
    if ((o.engine === 'tinker' || o.trainer === 'tinker') && o['kl-budget'] !== undefined) throw new UsageError('--kl-budget needs the embedded trainer: the Tinker API has no KL-to-base loss term to scale');
    if (o.trainer === 'tinker') {
      if (o.engine !== 'vllm' && o.engine !== 'sglang') throw new UsageError(`--trainer tinker goes with --engine vllm or sglang (--engine ${o.engine} ${o.engine === 'tinker' ? 'already trains on Tinker' : 'trains itself'})`);
      if (!o['tinker-url']) throw new UsageError('--trainer tinker needs --tinker-url (or TINKER_BASE_URL)');
      if ((o['kl-coef'] ?? 0) > 0) throw new UsageError('--kl-coef needs the embedded trainer: the Tinker API has no KL-to-base loss term');
      if ((o['reward-kl-coef'] ?? 0) > 0) throw new UsageError('--reward-kl-coef needs the embedded trainer: the Tinker API has no KL-to-base loss term');
      if ((o['entropy-guard'] ?? 0) > 0) throw new UsageError('--entropy-guard needs the embedded trainer: the Tinker API has no such loss term');
    }
    if (o.engine !== 'embedded' && o['opd-mode'] === 'topk') throw new UsageError(`--opd-mode topk needs --engine embedded: --engine ${o.engine} has no top-K scoring`);
  },
  run: (o) => serveWith(o),
});

/** --max-lag: a whole number of batches ≥ 0, or off (null) */
function maxLagOf(raw: string, source: string): number | null {
  if (raw === 'off') return null;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new UsageError(`${source} is a whole number of batches (0, 1, 2, …) or off, got '${raw}'`);
  return n;
}

/** `--cors-origin`: '*' or http(s) origins (scheme, host and port; no path). */
function corsOrigins(raw: string, source: string): string[] {
  const origins = parseOrigins(raw);
  for (const x of origins) {
    if (x !== '*' && !/^https?:\/\/[^/\s]+$/.test(x)) throw new UsageError(`${source}: '${x}' is not an origin (like https://app.example.com or http://localhost:5173) nor *`);
  }
  if (origins.length === 0) throw new UsageError(`${source} must name at least one origin, or *`);
  return origins;
}

function parseOverlong(raw: string, source: string): { lMax: number; lCache: number } {
  const m = /^(\d+),(\d+)$/.exec(raw);
  if (!m || Number(m[2]) > Number(m[1]) || Number(m[1]) === 0) throw new UsageError(`${source} expects L_MAX,L_CACHE with L_CACHE ≤ L_MAX (e.g. 1000,200), got '${raw}'`);
  return { lMax: Number(m[1]), lCache: Number(m[2]) };
}

async function serveWith(o: Values<typeof SERVE_OPTIONS>): Promise<void> {
  const { Store } = await import('../store/store.ts');
  const { Evaluator, loadEvalFile, EvalFileError } = await import('../trainer/evaluation.ts');
  let evalItems = null;
  try { evalItems = o['eval-file'] ? loadEvalFile(o['eval-file']) : null; } catch (e) { throw e instanceof EvalFileError ? new UsageError(`--eval-file: ${e.message}`) : e; }
  const { createLogger } = await import('../util/log.ts');
  const logger = createLogger({ level: o['log-level'], format: o['log-format'] });
  const info = (l: string) => logger.info(l);
  const dir = await modelDir(o.model);
  const { port, host } = o;
  const apiKey = readApiKey(o['api-key-file']);
  const dataDir = resolve(o['data-dir']);
  const contextOverflow = o['context-overflow'];
  // the store first: a data folder that cannot be created or opened fails before the model loads
  let store: StoreType;
  try {
    store = new Store(dataDir, { redact: o['no-redact'] ? 'off' : o.redact, keyFile: o['key-file'], retentionDays: o['retention-days'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new Error(`cannot use the data folder ${dataDir}: ${err.code ? `${err.code} (${err.message})` : err.message}`);
  }
  if (store.recoveredAborted > 0) logger.warn(`marked ${store.recoveredAborted} turn(s) interrupted by the last shutdown as aborted`);
  // the rest of the server is imported once the cheap checks above have passed (a bad data folder fails fast)
  const { EmbeddedEngine, engineStatsMetrics } = await import('../engine/embedded/engine.ts');
  const { startServer } = await import('../api/server.ts');
  const { createJudge } = await import('../judge/config.ts');
  const { JudgeLoop } = await import('../judge/loop.ts');
  const { probeJudge } = await import('../judge/probe.ts');
  const { TrainerLoop } = await import('../trainer/loop.ts');
  const { Tracking } = await import('../dashboard/tracking.ts');
  logger.info(`loading ${dir}…`);
  const log = info;
  const loadEngine = async () => o.engine === 'vllm' || o.engine === 'sglang'
    ? await (await import('../engine/select.ts')).servingEngine(o.engine, {
      url: o['serving-url']!, apiKey: o['serving-api-key'], model: o['serving-model'], modelDir: dir,
      adapterDir: resolve(o['adapter-dir'] ?? resolve(dataDir, 'serving-adapters')), kernel: o.kernel, threads: o.threads, log,
      trainer: o.trainer,
      tinker: o.trainer === 'tinker' ? { baseUrl: o['tinker-url']!, apiKey: o['tinker-api-key'], baseModel: o['tinker-base-model'], wire: o['tinker-wire'], ppoAs: o['tinker-loss'] } : undefined,
    })
    : o.engine === 'tinker'
    ? await (await import('../engine/tinker/engine.ts')).TinkerEngine.connect({
      baseUrl: o['tinker-url']!, apiKey: o['tinker-api-key'], tokenizerDir: dir, baseModel: o['tinker-base-model'], wire: o['tinker-wire'], ppoAs: o['tinker-loss'],
      log: info,
    })
    : await EmbeddedEngine.load(dir, { kernel: o.kernel, threads: o.threads, weightsDtype: o['weights-dtype'], prefixCacheMiB: o['prefix-cache-mib'], prefillChunk: o['prefill-chunk'], kvMemoryMiB: o['kv-memory-mib'], kvDtype: o['kv-dtype'] });
  let engine: Awaited<ReturnType<typeof loadEngine>>;
  try {
    engine = await loadEngine();
  } catch (e) {
    store.close();
    throw e;
  }
  // the defaults that follow the model (src/trainer/recipe.ts): a flag or its environment variable wins
  const auto = recipeFor({ chatTemplate: engine.tokenizer.chatTemplate !== null, embedded: o.engine === 'embedded' });
  const method = o.method ?? auto.method;
  const opdMode = o['opd-mode'] ?? auto.opdMode;
  const judgeKind = o.judge ?? (o['no-train'] ? 'lexical' : auto.judge);
  // the Tinker API has neither the KL term nor the entropy guard: where it trains, both default to off
  const tinkerTrains = o.engine === 'tinker' || o.trainer === 'tinker';
  const judgeConfig: JudgeConfig = {
    ...JUDGE_DEFAULTS, kind: judgeKind, url: o['judge-url'], model: o['judge-model'], apiKey: o['judge-api-key'],
    votes: o['judge-votes'] ?? defaultVotes(judgeKind), maxTokens: o['judge-max-tokens'], temperature: o['judge-temperature'],
    timeoutMs: o['judge-timeout-seconds'] * 1000, concurrency: o['judge-concurrency'], hintRules: !o['no-judge-hint-rules'],
  };
  if (leavesToModel(o)) logger.info(`default recipe for this model: ${auto.reason}`);
  // /metrics is answered synchronously: keep the embedded engine's figures fresh in the background
  let engineMetrics = '';
  const refreshMetrics = () => { if (engine instanceof EmbeddedEngine) engine.stats().then((st) => { engineMetrics = engineStatsMetrics(st); }, () => {}); };
  refreshMetrics();
  const metricsTimer = setInterval(refreshMetrics, 2000);
  metricsTimer.unref();
  const modelId = o['served-model-name'] ?? defaultModelId(o.model ?? dir);
  // metrics.jsonl (+ TensorBoard), the version archive, held-out evaluation and the dashboard
  const tracking = new Tracking({ store, engine, dataDir, modelId, judgeKind: judgeConfig.kind, learning: !o['no-train'], tensorboard: o.tensorboard, keepVersions: o['keep-versions'], engineName: o.engine });
  let trainer: InstanceType<typeof TrainerLoop> | null = null;
  let judgeLoop: InstanceType<typeof JudgeLoop> | null = null;
  // bounded off-policyness: new main turns wait while the trainer is more than --max-lag batches behind the
  // judged traffic (samples waiting to be trained, and turns waiting for the judge unless the judge is out:
  // an outage must not hold the traffic)
  const trainBacklog = () => {
    if (!trainer || trainer.health()) return 0; // a trainer that is not running (or keeps failing) holds nothing
    const judging = judgeLoop && !judgeLoop.inOutage ? judgeLoop.backlog() : null;
    return trainer.pendingCount() + (judging ? judging.waiting + judging.inFlight : 0);
  };
  const pace = o['max-lag'] === null || o['no-train'] ? null
    : new TrainingPace(trainBacklog, { maxLagBatches: o['max-lag'], batchSize: o['batch-size'], maxWaitMs: o['max-lag-wait-seconds'] * 1000 },
      (backlog) => logger.warn(`training pace: ${backlog} samples and judged turns wait for the trainer, more than it cleared in ${o['max-lag-wait-seconds']} s (a judge outage's or a restart's backlog, or a trainer slower than the traffic); new turns are answered at once until it has caught up`, { component: 'trainer' }));
  let server;
  // /readyz answers 200 only once every configured loop runs, and while each keeps running
  let started = false;
  const ready = () => {
    if (!started) return { ready: false, reason: 'starting' };
    for (const [name, loop] of [['judge', judgeLoop], ['trainer', trainer]] as const) {
      const problem = loop?.health();
      if (problem) return { ready: false, reason: `${name}: ${problem}` };
    }
    return { ready: true };
  };
  try {
    server = await startServer({
      engine, store, modelId, host, port, apiKey, allowInsecureBind: o['allow-insecure-bind'], corsOrigins: o['cors-origin'],
      maxConcurrent: o['max-concurrent'], queueWaitMs: o['queue-wait-seconds'] * 1000, maxBodyBytes: o['max-body-bytes'],
      sessionIdleMs: o['session-idle-seconds'] * 1000, defaultMaxTokens: o['default-max-tokens'],
      contextOverflow, ...(pace ? { pace } : {}),
      status: () => ({
        judge: judgeConfig.kind, judgeHealth: judgeLoop?.status() ?? null, trainer: trainer?.status() ?? null, pace: pace?.status() ?? null,
        // how sessions were identified: "header" means the OpenClaw plugin is doing its job
        sessionSources: Object.fromEntries((store.sql('SELECT id_source, COUNT(*) AS n FROM sessions GROUP BY id_source').all() as { id_source: string; n: number }[]).map((r) => [r.id_source, r.n])),
        turnTypes: Object.fromEntries((store.sql('SELECT turn_type || \'/\' || type_source AS k, COUNT(*) AS n FROM turns GROUP BY k').all() as { k: string; n: number }[]).map((r) => [r.k, r.n])),
      }), extraMetrics: () => engineMetrics + (trainer?.metrics() ?? '') + (judgeLoop?.metrics() ?? '') + (pace?.metrics() ?? ''), ready, dashboard: tracking.dashboard, publishedVersion: () => tracking.publishedVersion(),
    });
  } catch (e) {
    await engine.close(); store.close();
    throw e;
  }
  const { overlong } = o;
  trainer = o['no-train'] ? null : new TrainerLoop(store, engine, {
    method, opdTeacher: o['opd-teacher'] ?? auto.opdTeacher, rewardBaseline: o['reward-baseline'] ?? auto.rewardBaseline, overlong: overlong ?? null, checkpointDir: resolve(dataDir, 'checkpoints'),
    batchSize: o['batch-size'], maxStaleness: o['max-staleness'] ?? null, importanceCap: o['importance-cap'], staleDistill: o['stale-distill'], distillUntilMet: distillUntilMetOf(auto, { on: o['distill-until-met'], off: o['no-distill-until-met'] }), klBudget: o['kl-budget'] ?? null, canaryBudget: o['canary-budget'], loopUnlikelihood: o['loop-unlikelihood'], distillFade: o['distill-fade'], settle: o.settle ?? settleOf(auto, method), tailGuard: o['tail-guard'] ?? auto.tailGuard, anchorAnswers: o['anchor-answers'] ?? (tinkerTrains ? 0 : auto.anchorAnswers), keepNeutral: o['keep-neutral'] || RECIPE.keepNeutral, learningRate: o['learning-rate'] ?? auto.learningRate,
    klCoef: o['kl-coef'] ?? (tinkerTrains ? 0 : klCoefOf(auto, method)), rewardKlCoef: rewardKlCoefOf(auto, { klCoef: o['kl-coef'], rewardKlCoef: o['reward-kl-coef'] }), klEstimator: o['kl-estimator'] ?? auto.klEstimator,
    entropyGuard: o['entropy-guard'] ?? (tinkerTrains ? 0 : auto.entropyGuard), loopGuard: o['loop-guard'] ?? auto.loopGuard, likelihoodGuard: o['likelihood-guard'] ?? auto.likelihoodGuard, repeatGuard: o['repeat-guard'] ?? auto.repeatGuard, weights: { opd: o['opd-weight'] ?? opdWeightOf(auto, method), rl: 1 },
    opdMode, topk: { ...TRAINER_DEFAULTS.topk, selection: o['hint-selection'], k: o['topk-k'], set: o['topk-set'] },
    hindsight: o.hindsight || (RECIPE.hindsight && !o['no-hindsight']), negativeWeight: o['negative-weight'],
    lora: o.full ? null : { rank: o['lora-rank'], alpha: o['lora-alpha'] }, checkpointEvery: o['checkpoint-every'],
    log: (l) => (/WARNING|REJECTED/.test(l) ? logger.warn(l, { component: 'trainer' }) : logger.info(l, { component: 'trainer' })),
    error: (l) => logger.error(l, { component: 'trainer' }),
    onStep: (record) => { pace?.wake(); return tracking.onStep(record); },
  });
  let evaluator: InstanceType<typeof Evaluator> | null = null;
  try {
    await trainer?.init();
    const judge = createJudge(judgeConfig, engine);
    evaluator = !evalItems ? null : new Evaluator(engine, judge, evalItems, {
      every: o['eval-every'], samples: o['eval-samples'], maxTokens: o['eval-max-tokens'], log: info,
    }, (line) => tracking.metricsLog.eval(line));
    tracking.attach(trainer, evaluator);
    evaluator?.schedule(trainer?.step ?? 0); // the starting point of the curve
    // hints feed OPD only: binary learning does not ask for them
    judgeLoop = judge ? new JudgeLoop(store, judge, { hints: !o['no-hints'] && method !== 'binary', includeContext: o['judge-context'], concurrency: judgeConfig.concurrency,
      log: (l) => logger.info(l, { component: 'judge' }), warn: (l) => logger.warn(l, { component: 'judge' }) }) : null;
  } catch (e) {
    // no zombie: a server whose judge or trainer cannot start does not keep serving
    await server.close(); await engine.close(); store.close();
    throw e;
  }
  judgeLoop?.start();
  trainer?.start();
  started = true;
  logger.info(`openclaw-rl: serving '${modelId}' (${engine.info.modelType}, ${engine.info.kernel} × ${engine.info.threads}) at ${server.url}/v1 (dashboard: ${server.url}/) — data in ${dataDir}${apiKey ? ', API key required' : ''}, judge: ${judgeConfig.kind}${judgeConfig.kind === 'self' || judgeConfig.kind === 'llm' ? ` (${judgeConfig.votes} votes)` : ''}, learning: ${trainer ? `${method} (version ${trainer.version}), KL to base ${trainer.o.klEstimator} at β ${trainer.o.klCoef}${trainer.o.rewardKlCoef !== null && trainer.o.rewardKlCoef !== trainer.o.klCoef && method !== 'opd' ? ` (${trainer.o.rewardKlCoef} on answers trained by their reward alone or approved)` : ''}${trainer.o.entropyGuard > 0 ? `, entropy guard λ ${trainer.o.entropyGuard}` : ''}${method !== 'binary' ? `, OPD teacher ${trainer.o.opdTeacher}${trainer.o.weights.opd !== 1 ? ` (w_opd ${trainer.o.weights.opd})` : ''}${trainer.o.distillUntilMet && trainer.o.opdMode === 'topk' ? ', each answer distilled until it meets the hint' : ''}` : ''}${trainer.o.loopGuard !== 'off' ? `, loop guard ${trainer.o.loopGuard}` : ''}${trainer.o.likelihoodGuard !== 'off' ? `, likelihood guard ${trainer.o.likelihoodGuard}` : ''}${trainer.o.repeatGuard !== 'off' ? `, repeat guard ${trainer.o.repeatGuard}` : ''}${trainer.o.anchorAnswers > 0 ? `, ${trainer.o.anchorAnswers} anchor answers per stale batch` : ''}${trainer.o.tailGuard > 0 ? `, tail guard ${trainer.o.tailGuard}` : ''}${trainer.o.settle > 0 ? `, learning rate settling once ${trainer.o.settle * 100}% of recent answers please` : ''}, reward baseline ${trainer.o.rewardBaseline}` : 'off'}${pace ? `; new turns wait (≤ ${pace.o.maxWaitMs / 1000} s) while the trainer is more than ${pace.o.maxLagBatches} batch${pace.o.maxLagBatches === 1 ? '' : 'es'} behind` : ''}`);
  // an LLM judge that does not answer is reported now, not when the first turn waits for it
  if (judgeLoop && judgeConfig.kind === 'llm') {
    const loop = judgeLoop;
    void probeJudge(judgeConfig.url!, judgeConfig.apiKey).then((problem) => {
      if (problem) loop.failed(`unreachable: ${problem}`, 'turns are recorded, and judged once it answers');
    });
  }
  await new Promise<void>((resolveStop) => {
    const stop = async (signal: string) => {
      logger.info(`openclaw-rl: ${signal}, shutting down…`);
      await server!.close();
      await evaluator?.close();
      await judgeLoop?.stop();
      await trainer?.stop();
      clearInterval(metricsTimer);
      await engine.close();
      tracking.close();
      store.close();
      resolveStop();
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}

/** The server's key: the first line of --api-key-file, else OPENCLAW_RL_API_KEY, else SGLANG_API_KEY. */
function readApiKey(file: string | undefined): string | undefined {
  if (file) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch (e) { throw new UsageError(`--api-key-file: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`); }
    const key = text.split(/\r?\n/)[0].trim();
    if (!key) throw new UsageError(`--api-key-file: ${file} is empty (its first line must be the key)`);
    return key;
  }
  return process.env.OPENCLAW_RL_API_KEY || process.env.SGLANG_API_KEY || undefined;
}
