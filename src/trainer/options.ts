// The trainer's options and their defaults (the shared recipe, trainer/recipe.ts, plus the knobs only
// tests and agents change), and the record each step leaves. Kept apart from the loop so that callers
// that only configure a trainer need not read its machinery.
import type { LoraSettings } from '../engine/types.ts';
import { OPD_ADVANTAGE_CLIP, type Method } from '../learn/advantages.ts';
import { TOPK_DEFAULTS, type HintSelection } from '../learn/topk-opd.ts';
import { GUARD_DEFAULTS } from '../learn/weights-guard.ts';
import { IMPORTANCE_CAP, type StaleDistill } from '../learn/staleness.ts';
import { RECIPE, REPEAT_WINDOW } from './recipe.ts';
import type { KlEstimator } from '../learn/losses.ts';
import type { LoopGuard } from '../learn/loops.ts';
import type { RewardBaseline } from '../learn/baseline.ts';
import type { RepeatGuard } from '../learn/repeat-guard.ts';
import { LIKELIHOOD_FLOOR_DEFAULTS, type LikelihoodFloorOptions } from '../learn/likelihood-guard.ts';

/** The OPD teacher reading the hint: the base weights, the live policy, or both (top-K: an entry moves only where both agree, learn/topk-opd.ts agreeingAdvantages). */
export type OpdTeacher = 'base' | 'policy' | 'both';

export interface TrainerOptions {
  method: Method;
  batchSize: number;
  /**
   * drop samples whose behaviour version is more than this many versions behind; null (the default)
   * trains every sample, stale ones corrected by truncated importance weights (learn/staleness.ts)
   */
  maxStaleness: number | null;
  /** cap on the per-token importance weight π_current/π_behaviour of a stale sample */
  importanceCap: number;
  /**
   * how samples drawn by an older version are trained: 'decoupled' scores them under the current
   * weights first (an extra forward pass) and takes the clipped ratio against those, weighted by the
   * truncated importance weight (learn/staleness.ts); 'behaviour' takes the clipped PPO ratio against
   * the behaviour log-probs themselves — with one optimizer step per batch the ratio is then that
   * importance weight, so no extra pass is needed, and tokens that moved past the clip range get no gradient
   */
  staleCorrection: 'decoupled' | 'behaviour';
  /**
   * the distillation term of a stale sample (with 'decoupled'): 'full' as a fresh one's, 'prefix', each position
   * weighted by how likely the current weights are to write the context before it (learn/staleness.ts, prefixWeights),
   * or 'refresh' (top-K OPD, samples ≥ ANCHOR_STALENESS behind): the set is computed on the current weights' answer to
   * the same prompt instead of the old answer (trainer/current-answers.ts)
   */
  staleDistill: StaleDistill;
  /** top-K OPD: distil each position only until the answer meets the hint chosen there (trainer/distill.ts, untilMet) */
  distillUntilMet: boolean;
  /** top-K OPD: the distilled term fades once fewer than this share of the recent answers miss (learn/distill-fade.ts; 0 = never) */
  distillFade: number;
  /** the whole step settles once fewer than this share of the recent answers miss: the learning rate scales as the distilled term does under distillFade (0 = never) */
  settle: number;
  /** the tail guard: positive advantages of tokens sampled with probability below this are 0 (learn/tail-guard.ts; 0 = off) */
  tailGuard: number;
  /**
   * anchor answers: when a batch holds answers sampled two or more versions back (trainer/loop.ts, ANCHOR_STALENESS),
   * the current weights answer up to this many of their prompts, and those answers join the step with no reward or
   * distillation term, carrying only the KL and entropy terms — so the regularisers see the text the policy writes now,
   * not only the old versions' (0 = off)
   */
  anchorAnswers: number;
  /**
   * merge a batch's multi-turn samples whose prompt continues another sample's prompt + response
   * into one datum (learn/continuations.ts): the same loss, one pass over the shared context
   */
  mergeTurns: boolean;
  /**
   * the at-least-one rule: a session's first judged turn is kept as a sample even when neutral, if
   * the session has none yet (advantage 0: it only adds tokens to the batch, and a KL term when β > 0)
   */
  keepNeutral: boolean;
  learningRate: number;
  /** the learning rate of the step about to be taken, when it changes over the run (default: learningRate throughout) */
  learningRateAt?: (step: number) => number;
  clipLow: number;
  clipHigh: number;
  /**
   * β of the k3 KL-to-base term. Default 0.3, chosen by measurement (docs/benchmarks.md, "OPD, top-K
   * OPD and regularisers"): on stories260k-chat it kept the most satisfied-and-fluent answers over 3 seeds.
   * With β = 0, binary learns by breaking the text.
   */
  klCoef: number;
  /**
   * β of the KL term on an answer trained by its reward alone (binary, or combine on a turn with nothing distilled,
   * and hindsight answers) and on a distilled answer the judge approved (learn/kl-scale.ts, takesRewardBeta); distilled
   * answers it did not approve and anchor answers keep klCoef (null = klCoef everywhere). The term anchors what the
   * hinted teacher moves; a reward that keeps approving a met preference needs less of it.
   */
  rewardKlCoef: number | null;
  /**
   * the KL budget (learn/kl-budget.ts): the mean per-token KL to the base a training batch may show before β grows
   * past klCoef, step by step, until it is back under (null = β stays klCoef)
   */
  klBudget: number | null;
  /**
   * the canary budget (learn/canary-budget.ts): how far the canary's mean log-prob per token may fall below the base
   * model's before β (full and reward) grows in proportion to the excess (0 = off)
   */
  canaryBudget: number;
  /** the KL term's estimator at the sampled tokens (learn/losses.ts) */
  klEstimator: KlEstimator;
  /** λ of the entropy guard (learn/losses.ts, entropyExcessRow; 0 = off) */
  entropyGuard: number;
  /** what a looping answer's reward becomes (learn/loops.ts): capped at 0, −1, or left as judged; unless off, it is not distilled either */
  loopGuard: LoopGuard;
  /** λ of the unlikelihood term on a looping answer's repeats past the limit (learn/loops.ts, loopExcess; 0 = off) */
  loopUnlikelihood: number;
  /**
   * what the reward of an answer below the likelihood floor becomes (learn/likelihood-guard.ts), as loopGuard's
   * choices; unless off, such an answer is not distilled either, and the base answers the first judged requests
   * once each to calibrate the floor
   */
  likelihoodGuard: LoopGuard;
  likelihoodFloor: LikelihoodFloorOptions;
  /**
   * what the reward of an answer that repeats one of the last `repeatWindow` answers token for token becomes
   * (learn/repeat-guard.ts), as loopGuard's choices; the repeat is still distilled (its hint says what it lacked)
   */
  repeatGuard: RepeatGuard;
  repeatWindow: number;
  gradClipNorm: number;
  opdTeacher: OpdTeacher;
  /**
   * 'token': the teacher's log-prob of each sampled token, A_t = clip(teacher − behaviour, ±opdClip);
   * 'topk': upstream's top-K distillation over the student's K most likely tokens at each position,
   * with up to `topk.maxCandidates` hints per turn as teacher candidates (trainer/distill.ts)
   */
  opdMode: 'token' | 'topk';
  /** clip of teacher − behaviour per token in 'token' mode, and of teacher − old per set entry in 'topk' mode */
  opdClip: number;
  /** set: the student's top-K (upstream), or joined with the chosen teacher's top-K ('union', trainer/distill.ts) */
  topk: { k: number; maxCandidates: number; selection: HintSelection; set: 'student' | 'union' };
  weights: { opd: number; rl: number };
  overlong: { lMax: number; lCache: number } | null;
  /**
   * 'batch' subtracts the batch's mean reward from each sample's reward term (a baseline, as group
   * normalisation does for groups of answers to one prompt): when most answers fail, a rare success
   * gets a strong push and routine failures a mild one. 'group' normalises rewards within each group
   * of samples in the batch that share one prompt, (r − mean)/std (GRPO-style; singletons keep r).
   * 'recent' subtracts the mean reward over a window of recent samples (this batch's and the ones
   * before it, learn/baseline.ts): the batch baseline's push without zeroing a batch of equal rewards.
   * 'lift' is 'recent' clipped at zero (learn/baseline.ts, liftBaseline): the mean lifts a rare success while the model
   * fails, and never cancels a success once it pleases.
   * 'none' uses A = r as specified.
   */
  rewardBaseline: RewardBaseline;
  /**
   * hindsight answers (trainer/hindsight.ts): an approved answer that came after the user's
   * correction is also trained, with its reward term, as an answer to the corrected request(s)
   */
  hindsight: boolean;
  /**
   * scale of negative reward terms (after the baseline): 1 trains failures down as hard as successes
   * up; 0 learns from approved answers only (the failures still teach through hints and hindsight)
   */
  negativeWeight: number;
  /** the LoRA adapter to train, or null to train every weight (full-parameter) */
  lora: LoraSettings | null;
  checkpointEvery: number;
  checkpointDir: string;
  /** largest fall of the mean log-prob per canary token from one published version to the next (nats) */
  maxCanaryDrop: number;
  pollMs: number;
  log: (line: string) => void;
  /** failed runs of the loop (default: log) */
  error?: (line: string) => void;
  /** called after every step (published or rejected): metrics.jsonl, version archive, evaluation */
  onStep?: (record: StepRecord) => void | Promise<void>;
}

export const TRAINER_DEFAULTS: Omit<TrainerOptions, 'checkpointDir'> = {
  method: RECIPE.method, batchSize: RECIPE.batchSize, learningRate: RECIPE.learningRate, rewardBaseline: RECIPE.rewardBaseline, keepNeutral: RECIPE.keepNeutral,
  klCoef: RECIPE.klCoef, rewardKlCoef: null, klBudget: null, canaryBudget: RECIPE.canaryBudget, klEstimator: RECIPE.klEstimator, entropyGuard: RECIPE.entropyGuard, loopGuard: RECIPE.loopGuard, loopUnlikelihood: RECIPE.loopUnlikelihood, likelihoodGuard: RECIPE.likelihoodGuard, likelihoodFloor: { ...LIKELIHOOD_FLOOR_DEFAULTS }, repeatGuard: RECIPE.repeatGuard, repeatWindow: REPEAT_WINDOW, hindsight: RECIPE.hindsight, negativeWeight: RECIPE.negativeWeight, lora: { ...RECIPE.lora }, maxStaleness: null, importanceCap: IMPORTANCE_CAP, staleCorrection: 'decoupled', staleDistill: 'full', distillUntilMet: false, distillFade: 0, settle: 0, tailGuard: RECIPE.tailGuard, anchorAnswers: RECIPE.anchorAnswers, mergeTurns: false, clipLow: 0.2, clipHigh: 0.28, gradClipNorm: 1,
  opdTeacher: 'base', opdMode: 'token', opdClip: OPD_ADVANTAGE_CLIP, topk: { k: TOPK_DEFAULTS.k, maxCandidates: TOPK_DEFAULTS.maxCandidates, selection: TOPK_DEFAULTS.selection, set: RECIPE.topkSet },
  weights: { opd: 1, rl: 1 }, overlong: null, checkpointEvery: 1, maxCanaryDrop: GUARD_DEFAULTS.maxCanaryDrop, pollMs: 200, log: () => {},
};

export interface StepRecord {
  step: number | null; status: string; version: number | null; samples: number; tokens: number; loss: number | null; rewardMean: number | null;
  clipFraction: number | null; kl: number | null; entropyExcess?: number | null; teacherGap: number | null; gradNorm: number | null; stalenessMean: number | null; durationMs: number;
  /** the stalest sample (versions behind), the mean importance weight over its tokens, and the share of tokens at the cap */
  stalenessMax?: number | null; importanceWeightMean?: number | null; importanceTruncated?: number | null;
}
