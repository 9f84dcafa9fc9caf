// `openclaw-rl bench personalize`: the product's promise, measured. A server with the embedded engine,
// simulated users of one persona talking to it over HTTP, the judge and the learning loop — and every
// few conversations the held-out satisfaction rate of the live policy, next to satisfied-and-fluent
// (fluency measured against the base model's own samples) and drift (KL to base). Every evaluated
// sample's text goes to samples.jsonl in the report folder.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { Store } from '../store/store.ts';
import { startServer } from '../api/server.ts';
import { JudgeLoop } from '../judge/loop.ts';
import { createJudge, JUDGE_DEFAULTS, type JudgeConfig } from '../judge/config.ts';
import { TrainerLoop, TRAINER_DEFAULTS } from '../trainer/loop.ts';
import { RECIPE } from '../trainer/recipe.ts';
import type { OpdTeacher } from '../trainer/options.ts';
import type { KlEstimator } from '../learn/losses.ts';
import type { LoopGuard } from '../learn/loops.ts';
import type { StaleDistill } from '../learn/staleness.ts';
import type { Method } from '../learn/advantages.ts';
import type { RewardBaseline } from '../learn/baseline.ts';
import type { HintSelection } from '../learn/topk-opd.ts';
import type { Persona } from './persona.ts';
import { SimulatedUser } from './user.ts';
import { evaluateHeldOut, calibrateFluencyCached, preferenceBandNote, klToBase, referenceLogLikelihood, type EvaluatedSample, type FluencyBands } from './evaluate.ts';
import type { FluencyBand } from '../learn/fluency.ts';
import { stableEffect, type StableEffect } from '../learn/effect.ts';
import { LlmBackend, SelfBackend, type ChatBackend } from '../judge/backends.ts';
import { COMPACT_CONTEXT_LIMIT } from '../judge/prompts.ts';
import { judgeSatisfaction, SATISFACTION_JUDGE_DEFAULTS } from './judge-satisfaction.ts';
import { lineChartSvg, svgToPng } from './plot.ts';
import { judgeAgreement, formatTally, type JudgeAgreement, type JudgedTurn } from './judge-agreement.ts';

export interface CurvePoint {
  conversations: number; rate: number; fluentRate: number; satisfiedAndFluentRate: number; policyVersion: number; klToBase: number;
  /** fluency by the plain band alone (see bench/evaluate.ts) */
  plainFluentRate: number; plainSatisfiedAndFluentRate: number;
  /** distinct token bigrams over the held-out samples (the base's at conversation 0): variety next to fluency */
  distinct2: number;
  /** share of held-out samples that repeat an earlier one to the same prompt word for word */
  repeatRate: number;
  referenceLogLikelihood: number; seconds: number;
  /** the same measures on the persona's validation requests (only when it has them): the set recipes are chosen on */
  validation?: { rate: number; fluentRate: number; satisfiedAndFluentRate: number; plainFluentRate: number; plainSatisfiedAndFluentRate: number };
  /** judge-scored satisfaction: mean over samples of the mean of 5 graded votes (null: not asked, or no valid vote) */
  judgeSatisfaction: number | null;
  /** share of the judge's votes that gave a valid grade */
  judgeValidVotes: number | null;
}
/** An evaluated sample with the evaluation it belongs to (and its judge grades, when asked). */
export interface RecordedSample extends EvaluatedSample { conversations: number; policyVersion: number; judgeScore?: number | null; judgeGrades?: (number | null)[] }
export interface PersonalizeResult {
  persona: string; method: Method; seed: number;
  /** the method as the report names it, e.g. "opd (topk)" */
  label: string; opdMode: 'token' | 'topk'; klCoef: number; baseRate: number; finalRate: number; wallSeconds: number;
  baseSatisfiedAndFluent: number; finalSatisfiedAndFluent: number; finalKlToBase: number; fluencyBand: FluencyBand;
  /** the second band, for personas that state their preference (bench/evaluate.ts) */
  preferenceBand: FluencyBands['preference'];
  conversations: number; steps: number; curve: CurvePoint[]; samples: RecordedSample[];
  /** the trainer's log lines (one per step: samples, loss, distillation and hindsight counts), written to trainer.log */
  trainerLog: string[];
  /** judged answers the loop guard kept from being reinforced or distilled */
  loopingAnswers: number;
  /** approved answers the repeat guard kept from their reward */
  repeatedAnswers: number;
  /** judged answers below the likelihood guard's floor, and the floor (null while it was calibrating or the guard is off) */
  unlikelyAnswers: number; likelihoodFloor: number | null;
  /** upstream's measure: conversations until satisfied-and-fluent stays ≥ base + stableGain for 3 consecutive evaluations */
  stable: StableEffect & { gain: number };
  /** judged answers per conversation (the persona's `turns`) */
  turnsPerConversation: number;
  /** share of training answers that satisfied the user, by position in the conversation (first answer, second, …) */
  satisfiedByTurn: number[];
  /** the judge's scores against the user's own verdicts, over every judged training answer */
  judge: JudgeAgreement;
  /** satisfied-and-fluent on the validation requests at the start and the end (personas with validationPrompts) */
  validation?: { baseSatisfiedAndFluent: number; finalSatisfiedAndFluent: number; finalFluent: number };
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
  rewardBaseline?: RewardBaseline;
  /** cap on the importance weight of samples drawn by older versions (learn/staleness.ts) */
  importanceCap?: number;
  /** the distillation term of stale samples (trainer/options.ts, staleDistill) */
  staleDistill?: StaleDistill;
  /** top-K OPD only until the answer meets the hint (trainer/options.ts, distillUntilMet) */
  distillUntilMet?: boolean;
  /** the KL budget (trainer/options.ts, klBudget) */
  klBudget?: number;
  /** the canary budget (trainer/options.ts, canaryBudget) */
  canaryBudget?: number;
  /** λ of the unlikelihood term on looping answers' repeats (trainer/options.ts, loopUnlikelihood) */
  loopUnlikelihood?: number;
  /** the distilled term fades as the answers please (trainer/options.ts, distillFade) */
  distillFade?: number;
  /** the learning rate settles as the answers please (trainer/options.ts, settle) */
  settle?: number;
  /** tokens sampled below this probability are not reinforced (trainer/options.ts, tailGuard) */
  tailGuard?: number;
  /** anchor answers per stale batch (trainer/options.ts, anchorAnswers) */
  anchorAnswers?: number;
  /** the at-least-one rule */
  keepNeutral?: boolean;
  /** OPD on the sampled token or top-K distillation (trainer's opdMode) */
  opdMode?: 'token' | 'topk';
  hintSelection?: HintSelection;
  /** top-K OPD: entries per position from the student's old top-K (default the trainer's, 4) */
  topkK?: number;
  /** top-K OPD: the student's set, or joined with the teacher's top-K */
  topkSet?: 'student' | 'union';
  opdTeacher?: OpdTeacher;
  /** β of the KL-to-base penalty (default: the trainer's) */
  klCoef?: number;
  /** β on answers trained by their reward alone (default: klCoef) */
  rewardKlCoef?: number;
  /** its estimator (default: the recipe's) */
  klEstimator?: KlEstimator;
  /** λ of the entropy guard (default: the trainer's, off) */
  entropyGuard?: number;
  /** what a looping answer's reward becomes; under withhold or punish it is not distilled either (default: the trainer's, off) */
  loopGuard?: LoopGuard;
  /** what an answer below the base's likelihood floor gets; under withhold or punish it is not distilled either (default: the trainer's, off) */
  likelihoodGuard?: LoopGuard;
  /** what the reward of a word-for-word repeat of a recent answer becomes (default: the trainer's, off) */
  repeatGuard?: LoopGuard;
  /** w_opd next to w_rl = 1 (default 1) */
  opdWeight?: number;
  /** hindsight answers (trainer/hindsight.ts; default: the recipe's) */
  hindsight?: boolean;
  /** scale of negative reward terms (default: the recipe's) */
  negativeWeight?: number;
  /** also grade every held-out sample with the judge (self or llm): mean of 5 votes on 0–1 */
  judgeSatisfaction?: boolean;
  /** stop once the effect held for 3 consecutive evaluations (--conversations is then the cap) */
  untilStable?: boolean;
  /** the effect: satisfied-and-fluent at least this far above the base (default 0.5 = 50 points) */
  stableGain?: number;
  /** called with a live progress line */
  progress?: (line: string) => void;
}

/** The chat backend that grades satisfaction, from the run's judge configuration. */
function satisfactionBackend(c: JudgeConfig, engine: EmbeddedEngine): ChatBackend {
  if (c.kind === 'self') return new SelfBackend(engine);
  if (c.kind === 'llm' && c.url && c.model) return new LlmBackend({ baseUrl: c.url, model: c.model, apiKey: c.apiKey, timeoutMs: c.timeoutMs, retries: c.retries, maxConcurrent: c.concurrency });
  throw new Error('judge-scored satisfaction needs --judge self or --judge llm (the lexical judge cannot grade an answer)');
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
  const opdMode = o.opdMode ?? 'token', klCoef = o.klCoef ?? TRAINER_DEFAULTS.klCoef;
  const label = o.method === 'binary' ? 'binary' : `${o.method} (${opdMode})`;
  const trainerLog: string[] = [];
  const trainer = new TrainerLoop(store, engine, {
    method: o.method, opdMode, klCoef, rewardKlCoef: o.rewardKlCoef ?? null, klEstimator: o.klEstimator ?? RECIPE.klEstimator, entropyGuard: o.entropyGuard ?? RECIPE.entropyGuard, loopGuard: o.loopGuard ?? RECIPE.loopGuard, likelihoodGuard: o.likelihoodGuard ?? RECIPE.likelihoodGuard, repeatGuard: o.repeatGuard ?? RECIPE.repeatGuard, hindsight: o.hindsight ?? RECIPE.hindsight, negativeWeight: o.negativeWeight ?? RECIPE.negativeWeight, opdTeacher: o.opdTeacher ?? TRAINER_DEFAULTS.opdTeacher,
    topk: { ...TRAINER_DEFAULTS.topk, selection: o.hintSelection ?? TRAINER_DEFAULTS.topk.selection, k: o.topkK ?? TRAINER_DEFAULTS.topk.k, set: o.topkSet ?? TRAINER_DEFAULTS.topk.set },
    batchSize: o.batchSize ?? RECIPE.batchSize, learningRate: o.learningRate ?? RECIPE.learningRate, rewardBaseline: o.rewardBaseline ?? RECIPE.rewardBaseline, importanceCap: o.importanceCap ?? TRAINER_DEFAULTS.importanceCap, staleDistill: o.staleDistill ?? TRAINER_DEFAULTS.staleDistill, distillUntilMet: o.distillUntilMet ?? TRAINER_DEFAULTS.distillUntilMet, klBudget: o.klBudget ?? TRAINER_DEFAULTS.klBudget, canaryBudget: o.canaryBudget ?? TRAINER_DEFAULTS.canaryBudget, loopUnlikelihood: o.loopUnlikelihood ?? TRAINER_DEFAULTS.loopUnlikelihood, distillFade: o.distillFade ?? TRAINER_DEFAULTS.distillFade, settle: o.settle ?? TRAINER_DEFAULTS.settle, tailGuard: o.tailGuard ?? TRAINER_DEFAULTS.tailGuard, anchorAnswers: o.anchorAnswers ?? RECIPE.anchorAnswers,
    keepNeutral: o.keepNeutral ?? RECIPE.keepNeutral, lora: { rank: o.loraRank ?? RECIPE.lora.rank, alpha: 2 * (o.loraRank ?? RECIPE.lora.rank), seed },
    checkpointDir: join(dir, 'checkpoints'), checkpointEvery: 1_000_000, weights: { opd: o.opdWeight ?? 1, rl: 1 }, log: (line) => trainerLog.push(line),
  });
  await trainer.init();
  const userList = Array.from({ length: users }, (_, i) => new SimulatedUser({ baseUrl: `${server.url}/v1`, model: 'policy', persona: o.persona, seed: seed * 1000 + i, id: `u${i}` }));
  const curve: CurvePoint[] = [];
  const samples: RecordedSample[] = [];
  let band: FluencyBands | undefined, valBand: FluencyBands | undefined;
  const valPersona: Persona | null = o.persona.validationPrompts ? { ...o.persona, heldOutPrompts: o.persona.validationPrompts } : null;
  const gradeBackend = o.judgeSatisfaction ? satisfactionBackend(o.judge ?? JUDGE_DEFAULTS, engine) : null;
  const gradeOptions = { ...SATISFACTION_JUDGE_DEFAULTS, temperature: (o.judge ?? JUDGE_DEFAULTS).temperature, ...(engine.info.contextLength <= COMPACT_CONTEXT_LIMIT && o.judge?.kind === 'self' ? { compact: true, maxTokens: 16 } : {}) };
  const evaluate = async (done: number) => {
    const held = await evaluateHeldOut(engine, o.persona, evalK, band!);
    const val = valPersona ? await evaluateHeldOut(engine, valPersona, evalK, valBand!) : null;
    const graded = gradeBackend ? await Promise.all(held.samples.map((x) => judgeSatisfaction(gradeBackend, o.persona.description, x.prompt, x.text, gradeOptions))) : null;
    const scored = graded?.map((g) => g.score).filter((x): x is number => x !== null) ?? [];
    const votes = graded?.flatMap((g) => g.grades) ?? [];
    const point: CurvePoint = {
      conversations: done, rate: held.rate, fluentRate: held.fluentRate, satisfiedAndFluentRate: held.satisfiedAndFluentRate, policyVersion: trainer.version,
      plainFluentRate: held.plainFluentRate, plainSatisfiedAndFluentRate: held.plainSatisfiedAndFluentRate, distinct2: held.distinct2, repeatRate: held.repeatRate,
      klToBase: trainer.version === 0 ? 0 : await klToBase(engine), referenceLogLikelihood: await referenceLogLikelihood(engine), seconds: (performance.now() - t0) / 1000,
      judgeSatisfaction: scored.length ? scored.reduce((a, b) => a + b, 0) / scored.length : null,
      judgeValidVotes: graded ? votes.filter((v) => v !== null).length / Math.max(1, votes.length) : null,
      ...(val ? { validation: { rate: val.rate, fluentRate: val.fluentRate, satisfiedAndFluentRate: val.satisfiedAndFluentRate, plainFluentRate: val.plainFluentRate, plainSatisfiedAndFluentRate: val.plainSatisfiedAndFluentRate } } : {}),
    };
    curve.push(point);
    held.samples.forEach((x, i) => samples.push({ conversations: done, policyVersion: trainer.version, ...x, ...(graded ? { judgeScore: graded[i].score, judgeGrades: graded[i].grades } : {}) }));
    o.progress?.(`[${o.persona.name} · ${label}] ${done}/${o.conversations} conversations · version ${trainer.version} · held-out satisfaction ${pct(point.rate)} · ` +
      `satisfied-and-fluent ${pct(point.satisfiedAndFluentRate)} (fluent ${pct(point.fluentRate)}${band!.preference ? `; plain band ${pct(point.plainSatisfiedAndFluentRate)}, fluent ${pct(point.plainFluentRate)}` : ''}) · distinct-2 ${point.distinct2.toFixed(2)} · repeats ${pct(point.repeatRate)} · KL ${point.klToBase.toFixed(3)}` +
      `${point.validation ? ` · validation satisfied-and-fluent ${pct(point.validation.satisfiedAndFluentRate)} (fluent ${pct(point.validation.fluentRate)})` : ''}` +
      `${graded ? ` · judge-scored ${point.judgeSatisfaction === null ? '–' : point.judgeSatisfaction.toFixed(2)} (${pct(point.judgeValidVotes!)} valid votes)` : ''} · ${point.seconds.toFixed(1)} s`);
  };
  const stableGain = o.stableGain ?? 0.5;
  /** every training session's id and the user's verdict on each of its answers */
  const sessions: { id: string; turns: boolean[] }[] = [];
  const stableNow = () => stableEffect(curve.map((p) => ({ conversations: p.conversations, rate: p.satisfiedAndFluentRate })), stableGain);
  try {
    o.progress?.(`[${o.persona.name} · ${label}] calibrating fluency on the base model's own held-out samples…`);
    band = await calibrateFluencyCached(engine, o.model, o.persona, evalK);
    const bandNote = preferenceBandNote(band, o.persona, evalK);
    if (bandNote) o.progress?.(`[${o.persona.name} · ${label}] ${bandNote}`);
    if (valPersona) valBand = await calibrateFluencyCached(engine, o.model, valPersona, evalK);
    await evaluate(0);
    let done = 0, satisfiedSeen = 0;
    while (done < o.conversations) {
      const round = Math.min(users, o.conversations - done);
      const results = await Promise.all(userList.slice(0, round).map((u, i) => u.converse(done + i)));
      results.forEach((r, i) => sessions.push({ id: `${userList[i].id}-${done + i}`, turns: r.turns.map((t) => t.satisfied) }));
      done += round;
      satisfiedSeen += results.filter((r) => r.satisfied).length;
      await judgeLoop.tick();
      await trainer.tick();
      if (done % evalEvery === 0 || done === o.conversations) {
        await evaluate(done);
        if (o.untilStable && stableNow().at !== null) { o.progress?.(`[${o.persona.name} · ${label}] the effect held for 3 consecutive evaluations (from ${stableNow().at} conversations): stopping`); break; }
      }
      else o.progress?.(`[${o.persona.name} · ${label}] ${done}/${o.conversations} conversations · version ${trainer.version} · satisfied in conversation ${((satisfiedSeen / done) * 100).toFixed(0)}%`);
    }
    const turnsPer = o.persona.turns ?? 1;
    const judged: JudgedTurn[] = sessions.flatMap((sess) => {
      const main = store.turns(sess.id).filter((t) => t.turn_type === 'main');
      return sess.turns.map((satisfied, i) => {
        const j = main[i] ? store.judgement(main[i].id) : undefined;
        return { satisfied, score: j?.status === 'done' ? j.score : null, hint: j?.status === 'done' ? j.hint : null };
      });
    });
    const agreement = judgeAgreement(judged);
    const satisfiedByTurn = Array.from({ length: turnsPer }, (_, i) => sessions.filter((x) => x.turns[i]).length / Math.max(1, sessions.length));
    o.progress?.(`[${o.persona.name} · ${label}] judge vs the user: satisfied answers ${formatTally(agreement.satisfied)}; unsatisfied ${formatTally(agreement.unsatisfied)}; ` +
      `sign agreement ${agreement.signAgreement === null ? '–' : pct(agreement.signAgreement)}; satisfied by turn ${satisfiedByTurn.map(pct).join(' / ')}`);
    return {
      turnsPerConversation: turnsPer, satisfiedByTurn, judge: agreement,
      persona: o.persona.name, method: o.method, label, opdMode, klCoef, seed, baseRate: curve[0].rate, finalRate: curve.at(-1)!.rate, wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
      baseSatisfiedAndFluent: curve[0].satisfiedAndFluentRate, finalSatisfiedAndFluent: curve.at(-1)!.satisfiedAndFluentRate, finalKlToBase: curve.at(-1)!.klToBase,
      fluencyBand: band.plain, preferenceBand: band.preference, conversations: done, steps: trainer.step, curve, samples, trainerLog, loopingAnswers: trainer.counts.looping, repeatedAnswers: trainer.counts.repeats, unlikelyAnswers: trainer.counts.unlikely, likelihoodFloor: trainer.likelihoodFloor.floor, stable: { ...stableNow(), gain: stableGain },
      ...(curve[0].validation ? { validation: { baseSatisfiedAndFluent: curve[0].validation.satisfiedAndFluentRate, finalSatisfiedAndFluent: curve.at(-1)!.validation!.satisfiedAndFluentRate, finalFluent: curve.at(-1)!.validation!.fluentRate } } : {}),
    };
  } finally {
    await server.close();
    await engine.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;

/**
 * curve.json, plot.svg/png (satisfied and satisfied-and-fluent), kl.svg/png (KL to base), summary.md and
 * samples.jsonl (every evaluated sample's text with its verdicts) and trainer.log (the trainer's lines) for one or more runs of the same persona.
 */
export async function writeReport(outDir: string, runs: PersonalizeResult[]): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const files = ['curve.json', 'plot.svg', 'plot.png', 'kl.svg', 'kl.png', 'summary.md', 'samples.jsonl', 'trainer.log'].map((f) => join(outDir, f));
  const lean = runs.map(({ samples: _samples, trainerLog: _log, ...r }) => r);
  writeFileSync(files[0], JSON.stringify(lean.length === 1 ? lean[0] : lean, null, 2) + '\n');
  const svg = lineChartSvg(runs.flatMap((r) => [
    { label: `${r.label} satisfied`, points: r.curve.map((p) => ({ x: p.conversations, y: p.rate })) },
    { label: `${r.label} sat. & fluent`, points: r.curve.map((p) => ({ x: p.conversations, y: p.satisfiedAndFluentRate })) },
  ]), { title: `Held-out satisfaction — persona "${runs[0].persona}"`, xLabel: 'conversations', yLabel: 'share of held-out answers' });
  writeFileSync(files[1], svg);
  await svgToPng(svg, files[2]);
  const klMax = Math.max(0.05, ...runs.flatMap((r) => r.curve.map((p) => p.klToBase)));
  const klSvg = lineChartSvg(runs.map((r) => ({ label: r.label, points: r.curve.map((p) => ({ x: p.conversations, y: p.klToBase })) })), {
    title: `KL(policy ‖ base) on neutral prompts — "${runs[0].persona}"`, xLabel: 'conversations', yLabel: 'nats per token', yMax: klMax, yFormat: (y) => y.toFixed(2),
  });
  writeFileSync(files[3], klSvg);
  await svgToPng(klSvg, files[4]);
  const at = (r: PersonalizeResult, n: number, key: 'rate' | 'satisfiedAndFluentRate') => { if (r.conversations < n) return '–'; const p = r.curve.filter((c) => c.conversations <= n).at(-1); return p ? pct(p[key]) : '–'; };
  const band = runs[0].fluencyBand;
  const grade = (p: CurvePoint) => (p.judgeSatisfaction === null ? '–' : p.judgeSatisfaction.toFixed(2));
  const judged = (r: PersonalizeResult) => (r.curve[0].judgeValidVotes === null ? '–' : `${grade(r.curve[0])} → ${grade(r.curve.at(-1)!)} (${pct(r.curve.at(-1)!.judgeValidVotes!)} valid)`);
  const lines = [
    `# Personalization: ${runs[0].persona}`, '',
    'Each cell: held-out satisfied / satisfied-and-fluent. Fluent: base-model mean log-likelihood per token ≥ ' +
      `${band.lower.toFixed(3)} (the ${band.percentile * 100}th percentile of ${band.calibrationSamples} base samples) and no loops` +
      (runs[0].preferenceBand ? `, or on the request with the preference as a hint ≥ ${runs[0].preferenceBand.lower.toFixed(3)} and no 3-token piece more than ${runs[0].preferenceBand.maxRepeats} times (same percentiles of the base's own satisfying samples for that request); ` +
        `by the plain band alone, final satisfied-and-fluent / fluent: ${runs.map((r) => `${r.label} ${pct(r.curve.at(-1)!.plainSatisfiedAndFluentRate)} / ${pct(r.curve.at(-1)!.plainFluentRate)}`).join(', ')}.` : '.'), '',
    `Stable: conversations until satisfied-and-fluent held ≥ base + ${(runs[0].stable.gain * 100).toFixed(0)} points for 3 consecutive evaluations (– = not within the run). ` +
      'Judge-scored: mean over held-out samples of the mean of 5 judge grades (0–1), with the share of valid votes.', '',
    `Turns: ${runs[0].turnsPerConversation} judged answer(s) per conversation. Judge vs the user (training answers): ` +
      runs.map((r) => `${r.label}: satisfied ${formatTally(r.judge.satisfied)}, unsatisfied ${formatTally(r.judge.unsatisfied)}, sign agreement ${r.judge.signAgreement === null ? '–' : pct(r.judge.signAgreement)}`).join('; ') + '.', '',
    ...(runs[0].validation ? [`Validation requests (the set a recipe is chosen on; held-out stays untuned), satisfied-and-fluent base → final: ` +
      runs.map((r) => r.validation ? `${r.label} ${pct(r.validation.baseSatisfiedAndFluent)} → ${pct(r.validation.finalSatisfiedAndFluent)} (fluent ${pct(r.validation.finalFluent)})` : `${r.label} –`).join(', ') + '.', ''] : []),
    '| method | base | after 50 | after 100 | after 200 | final | fluent (final; base) | distinct-2 (final; base) | stable at | judge-scored (base → final) | conversations | steps | KL to base (final) | wall time |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.label} | ${pct(r.baseRate)} / ${pct(r.baseSatisfiedAndFluent)} | ${at(r, 50, 'rate')} / ${at(r, 50, 'satisfiedAndFluentRate')} | ` +
      `${at(r, 100, 'rate')} / ${at(r, 100, 'satisfiedAndFluentRate')} | ${at(r, 200, 'rate')} / ${at(r, 200, 'satisfiedAndFluentRate')} | ` +
      `${pct(r.finalRate)} / ${pct(r.finalSatisfiedAndFluent)} | ${pct(r.curve.at(-1)!.fluentRate)}; ${pct(r.curve[0].fluentRate)} | ${r.curve.at(-1)!.distinct2.toFixed(2)}; ${r.curve[0].distinct2.toFixed(2)} | ${r.stable.at ?? '–'} | ${judged(r)} | ${r.conversations} | ${r.steps} | ${r.finalKlToBase.toFixed(3)} | ${r.wallSeconds} s |`),
    '',
  ];
  writeFileSync(files[5], lines.join('\n'));
  writeFileSync(files[6], runs.flatMap((r) => r.samples.map((x) => JSON.stringify({ method: r.method, opdMode: r.opdMode, runSeed: r.seed, ...x }))).join('\n') + '\n');
  writeFileSync(files[7], runs.flatMap((r) => r.trainerLog.map((l) => `[${r.label}] ${l}`)).join('\n') + '\n');
  return files;
}
