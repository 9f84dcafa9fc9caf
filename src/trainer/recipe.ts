// The default learning recipe: the one set of hyperparameters that `serve`, `demo` and
// `bench personalize` share when no flag says otherwise (and TrainerLoop's own defaults). It is
// what measured best — see docs/benchmarks.md, "Server path: the default recipe" — so a user who
// serves gets what the benchmark shows. Change a default here, with the measurement that backs it.
import type { Method } from '../learn/advantages.ts';
import type { KlEstimator } from '../learn/losses.ts';
import type { LoopGuard } from '../learn/loops.ts';
import type { RepeatGuard } from '../learn/repeat-guard.ts';
import type { OpdTeacher } from './options.ts';
import { REWARD_BASELINES, type RewardBaseline } from '../learn/baseline.ts';
import { CANARY_BUDGET_DEFAULTS } from '../learn/canary-budget.ts';

export interface Recipe {
  method: Method;
  learningRate: number;
  batchSize: number;
  lora: { rank: number; alpha: number };
  rewardBaseline: RewardBaseline;
  /** the at-least-one rule (see TrainerOptions.keepNeutral) */
  keepNeutral: boolean;
  /** β of the KL-to-base term in the loss */
  klCoef: number;
  /** how that term is estimated at the sampled tokens (learn/losses.ts, KlEstimator) */
  klEstimator: KlEstimator;
  /** λ of the entropy guard (learn/losses.ts, entropyExcessRow) */
  entropyGuard: number;
  /** what a looping answer's reward becomes (learn/loops.ts) */
  loopGuard: LoopGuard;
  /** what an answer below the base's likelihood floor gets (learn/likelihood-guard.ts) */
  likelihoodGuard: LoopGuard;
  /** what an answer that repeats a recent answer word for word gets (learn/repeat-guard.ts) */
  repeatGuard: RepeatGuard;
  /** anchor answers per stale batch (TrainerOptions.anchorAnswers; 0 = off) */
  anchorAnswers: number;
  /** the tail guard's probability (learn/tail-guard.ts; 0 = off) */
  tailGuard: number;
  /** hindsight answers: an approved answer after a correction also trains the corrected request */
  hindsight: boolean;
  /** scale of negative reward terms (1: as hard as positive ones) */
  negativeWeight: number;
  /** top-K OPD's set per position: the student's top-K (upstream), or joined with the teacher's */
  topkSet: 'student' | 'union';
  /** how far (nats per token) the canary may fall below the base's before β grows (learn/canary-budget.ts; 0 = off) */
  canaryBudget: number;
  /** λ of the unlikelihood term on a looping answer's repeats (learn/loops.ts, loopExcess; 0 = off) */
  loopUnlikelihood: number;
}

export const RECIPE: Readonly<Recipe> = Object.freeze({
  method: 'binary',
  learningRate: 3e-3,
  batchSize: 8,
  lora: Object.freeze({ rank: 8, alpha: 16 }),
  rewardBaseline: 'recent',
  keepNeutral: false,
  // β = 0.3: chosen by measurement on stories260k-chat over 3 seeds (docs/benchmarks.md, the β study)
  klCoef: 0.3,
  klEstimator: 'k3',
  // off for stories260K's recipe, where it was not measured; the chat model's recipe turns it on (recipeFor)
  entropyGuard: 0,
  // off for stories260K's recipe, where it was not measured (recipeFor sets the chat model's)
  loopGuard: 'off',
  // off for stories260K's recipe, where it was not measured (recipeFor sets the chat model's)
  likelihoodGuard: 'off',
  // off for stories260K's recipe, where it was not measured (recipeFor sets the chat model's)
  repeatGuard: 'off',
  // off for stories260K's recipe, where it was not measured (recipeFor sets the chat model's)
  anchorAnswers: 0,
  // off for stories260K's recipe, where it was not measured (recipeFor sets the chat model's)
  tailGuard: 0,
  // hindsight on: binary gained +26 to +60 points of held-out satisfied-and-fluent with it on chat-cat/dog/frog-lover
  // (medians of 3 seeds), against +0 to +18 without (seed 1); docs/benchmarks.md, issue 12 session 6
  hindsight: true,
  negativeWeight: 1,
  // the joined set: on stories260k-chat combine with top-K OPD gained more with it on the validation requests
  // (docs/benchmarks.md, issue 12 session 8); `--topk-set student` is upstream's set
  topkSet: 'union',
  // 1 nat: the persona runs' 96 conversations move the canary by 0.2–1.07 (it bound in 1 of 84 runs' paths, on the
  // last two steps), so it acts on long runs of a met preference, where β 0.1 on reward-trained answers let it fall to
  // the weights guard's floor (docs/benchmarks.md, issue 12 session 28)
  canaryBudget: 1,
  loopUnlikelihood: 0,
});

/** What the default recipe needs to know about the served model and engine. */
export interface ModelTraits {
  /** the tokenizer carries a chat template: the model was taught to follow requests (and so can read a hint) */
  chatTemplate: boolean;
  /** the engine scores top-K log-probs (top-K OPD) and can judge with its own base weights (the embedded engine) */
  embedded: boolean;
}

/** λ of the entropy guard in the chat model's recipe (docs/benchmarks.md, issue 12 session 12). */
export const CHAT_ENTROPY_GUARD = 1;

/**
 * Learning rate of the chat model's recipe: with the judge's hint rules and combine on hinted turns, 5e-3 gained
 * +90/+88/+86/+64 against 3e-3's +82/+78/+96/+44 (dog/cat/frog/bear, 3 seeds side by side, fluency 94–100%;
 * docs/benchmarks.md, issue 12 session 14). stories260K's recipe keeps RECIPE.learningRate.
 */
export const CHAT_LEARNING_RATE = 5e-3;

/**
 * The OPD teacher of the chat model's recipe: the live policy reading the hint, so the distilled signal is the hint's
 * effect alone (teacher and student differ only by it), where the base teacher also pulled every position back towards
 * the base. OPD alone gained +92/+94/+92/+90 (dog/cat/frog/bear, at CHAT_KL_COEF) with it against +78/+74/+64/+30 with
 * the base (docs/benchmarks.md, issue 12 session 15). Upstream's Tinker path distils from the live policy too; its slime path keeps the frozen base.
 */
export const CHAT_OPD_TEACHER: OpdTeacher = 'policy';

/**
 * β of the KL-to-base term in the chat model's recipe. 0.1 while the base was the OPD teacher (its sets pulled towards
 * the base too); with the live policy as teacher nothing else anchors the policy, and at 0.1 OPD alone lost the text
 * on one run of twelve (frog seed 2: fluent 30%, KL 0.75) where 0.2 kept every run at 92–100% (docs/benchmarks.md, issue 12
 * session 15). Binary keeps 0.1: it never had the base's pull, and at 0.2 it gained +64/+66/+58/+32 (dog/cat/frog/bear)
 * against +88/+78/+94/+82 at 0.1.
 */
export const CHAT_KL_COEF = 0.2;
/** β of the chat model's recipe for binary alone (no OPD term). */
export const CHAT_BINARY_KL_COEF = 0.1;

/**
 * w_opd, the distillation term's weight next to w_rl = 1, in the chat model's recipe (combine). At 2 combine gained
 * +90/+84/+94/+84 (dog/cat/frog/bear, 3 seeds) against w_opd 1's +90/+84/+96/+58, and +88/+70/+70 on the blind
 * personas against +82/+60/+54: the reward term carries the small judge's misreadings (bear's "Great, more like this
 * please." is −1), the distilled term does not. Its loops cost fluency unless the loop guard is on (CHAT_LOOP_GUARD;
 * docs/benchmarks.md, issue 12 session 16).
 */
export const CHAT_OPD_WEIGHT = 2;

/**
 * The loop guard of the chat model's recipe (learn/loops.ts): a looping answer is neither reinforced nor distilled. With
 * w_opd 2, through `serve` after the drain, the answers went from 88/92/100/90% fluent to 94/94/98/94% (dog/cat/frog/bear;
 * base 98–100%) at +88/+88/+98/+90 against +82/+90/+100/+84 (docs/benchmarks.md, issue 12 session 16). Its reward is −1
 * (punish) rather than at most 0 (withhold): side by side, 3 seeds, in-process fluency moved +4/+3/−2/0 points on the
 * shipped personas and +2/+2/+9 on the blind bunny/fish/tree (tree 80 → 89%), through `serve` −1/−1/−3/−2 and +5/+2 on
 * fish/tree, at the same gains (issue 12 session 19). Against the recent-reward baseline, which starts near −1, a
 * withheld loop (0) was even reinforced early on.
 */
export const CHAT_LOOP_GUARD: LoopGuard = 'punish';

/**
 * The reward baseline of the chat model's recipe (learn/baseline.ts): the recent mean while it is below zero, else zero.
 * With the recent mean itself, once the answers mostly pleased, a success kept only the sliver above a mean near one
 * while the KL and entropy terms kept pulling towards the base. Side by side (3 seeds, combine): the six blind personas
 * gained +93/+95/+95/+95/+91/+85 against +85/+90/+94/+82/+85/+87 at 89–99% fluent against 85–95%, and through `serve`
 * the shipped ones +93/+95/+89/+97 against +89/+90/+89/+95; in-process the shipped ones are within the seeds' spread
 * (docs/benchmarks.md, issue 12 session 25). The swings after a preference is met remain.
 */
export const CHAT_REWARD_BASELINE: RewardBaseline = 'lift';

/**
 * β on answers trained by their reward alone (binary, combine's undistilled turns, hindsight answers) and on distilled
 * answers the judge approved (learn/kl-scale.ts, takesRewardBeta) in the chat model's recipe; distilled answers it did
 * not approve and anchor answers keep CHAT_KL_COEF. The approved distilled answers joined in session 32: at CHAT_KL_COEF
 * combine kept a few percent of the base's opening at the one position that decides a met preference ("a little girl
 * named Tom" among "a bear named Tom") and ended under binary on bear through `serve`; with them, side by side over 3
 * seeds (medians), combine gained +100/+95/+96/+95 in-process and +99/+95/+96/+97 through `serve` (bear/dog/cat/frog)
 * against the earlier rule's +99/+93/+97/+97 and +97/+92/+95/+92 and binary's +100/+89/+90/+91 and +99/+73/+92/+91, at
 * 97–100% fluent (base 97%), and the blind fish/tree/bunny +85/+96/+96 and +94/+95/+93 against +85/+93/+93 and
 * +95/+95/+95 (docs/benchmarks.md, issue 12 session 32). Late in a run few turns are distilled, so combine's late steps
 * were mostly binary's signal under combine's larger β, and binary ended above it. With this and CHAT_DISTILL_UNTIL_MET,
 * side by side over 3 seeds (medians) the six blind personas gained +87/+94/+91/+97/+94/+94 in-process against the earlier
 * default's +84/+92/+91/+88/+95/+87 at 92–100% fluent against 89–98% (fish/tree/hat/kite/apple/bunny), through `serve`
 * +79/+97/+86/+94/+97/+95 against +79/+93/+88/+89/+95/+85, and on the shipped four combine ended at or above binary on 3
 * of 4 in-process and 4 of 4 through `serve` (docs/benchmarks.md, issue 12 sessions 26–27). On its own it let a long
 * run on a met preference walk everyday text down to the weights guard's floor (the 3-minute load with a 5-minute judge
 * outage: 37.6–59.5% of turns trained); with the canary budget (RECIPE.canaryBudget) the same load trains 100.0%
 * (session 28). It applies only when --kl-coef is left to the model: a β the user sets holds for every answer unless
 * --reward-kl-coef says otherwise.
 */
export const CHAT_REWARD_KL_COEF = 0.1;

/**
 * Top-K OPD distils each position only until the answer has what the hint asks for (learn/topk.ts, distillUntilMet) in
 * the chat model's recipe: past that point the hinted teacher only asks for more of the same, and that is where frog's
 * repeats came from (the default lost 67 frog answers to unfluent text over the final evaluations of 3 seeds; with this
 * and CHAT_REWARD_KL_COEF, 37; docs/benchmarks.md, issue 12 session 26).
 */
export const CHAT_DISTILL_UNTIL_MET = true;

/**
 * The repeat guard of the chat model's recipe (learn/repeat-guard.ts): off. On a preference the base's favourite answer
 * already meets (chat-short-stories) the policy collapses onto one story (87–97% of held-out answers repeat one told
 * before to the same request); withholding a retelling's reward took that to 29–73% at 5–13 points of the gain, and on
 * the blind brief persona it kept the preference from being learned (+7/+51 in-process against +75/+78), where the
 * policy learns "short" by settling on a short story it was praised for. The shipped personas: benchmarks.md, issue 12
 * session 31.
 */
export const CHAT_REPEAT_GUARD: RepeatGuard = 'off';

/** How many recent answers the repeat guard compares a new one with. */
export const REPEAT_WINDOW = 64;

/** The likelihood guard of the chat model's recipe (learn/likelihood-guard.ts). */
export const CHAT_LIKELIHOOD_GUARD: LoopGuard = 'off';

/**
 * Anchor answers per stale batch in the chat model's recipe (TrainerOptions.anchorAnswers). Through `serve`, unpaced,
 * most steps are taken after the traffic on answers sampled by versions 0–5, so the KL and entropy terms only ever saw
 * the old versions' text; four answers of the current weights a step put them on the text the policy writes now. Bear
 * went from 89/85/87/88/87/92% fluent to 94/91/95/98/90/95% (base 97%) at +78 against +82 (medians), KL to base 0.12–0.28
 * against 0.21–0.41; frog and dog stayed (92 and 93% against 94 and 93–96%) (docs/benchmarks.md, issue 12 session 18).
 * In-process training, where a batch is at most a version behind, draws none (ANCHOR_STALENESS in trainer/loop.ts).
 */
export const CHAT_ANCHOR_ANSWERS = 4;

/**
 * The tail guard of the chat model's recipe (learn/tail-guard.ts): a token sampled with probability under 0.05 is not
 * reinforced. In-process beside the default, blind tree went from 85–95% fluent (9 runs, median 90%) to 93–99% (6 runs,
 * median 98%; base 98%) at a gain no lower; frog, bear and cat gained fluency too, fish held (docs/benchmarks.md, issue
 * 12 session 21).
 */
export const CHAT_TAIL_GUARD = 0.05;

/**
 * The learning rate's settle point for OPD alone in the chat model's recipe (trainer/options.ts, settle): it scales
 * down once fewer than half of the last 64 judged answers miss. OPD alone has no reward term to hold a met preference,
 * so it kept distilling at the full rate and cat's text wore out (86% fluent against the base's 97%, 3 seeds, session
 * 36). Over 5 seeds (docs/benchmarks.md, issue 12 session 37) OPD alone gains +64/+58/+75/+83 in-process at
 * 98/93/97/97% fluent and +68/+61/+70/+78 through `serve` at 98/93/95/97% (dog/cat/frog/bear; base 97%), the two
 * paths within 5 points; with a window that missed approved answers (so it barely settled) dog's paths were 13 apart
 * and cat 91% fluent. Combine and binary keep 0: their reward term already holds a met preference, and their
 * acceptance runs were measured without it.
 */
export const CHAT_OPD_SETTLE = 0.5;

/** The defaults that follow the model: how to learn and who judges, when no flag says otherwise. */
export interface ModelRecipe {
  method: Method;
  opdMode: 'token' | 'topk';
  judge: 'lexical' | 'self';
  /** β of the KL-to-base term (for the recipe's method and opd; binaryKlCoef for binary) and how it is estimated */
  klCoef: number;
  binaryKlCoef: number;
  klEstimator: KlEstimator;
  /** λ of the entropy guard */
  entropyGuard: number;
  /** what a looping answer's reward becomes */
  loopGuard: LoopGuard;
  /** what the reward of an answer below the base's likelihood floor becomes */
  likelihoodGuard: LoopGuard;
  /** what the reward of a word-for-word repeat of a recent answer becomes */
  repeatGuard: RepeatGuard;
  /** anchor answers per stale batch */
  anchorAnswers: number;
  /** tokens sampled below this probability are not reinforced (0 = off) */
  tailGuard: number;
  /** w_opd in combine: the weight of the distillation term next to the reward's (w_rl = 1); OPD alone keeps 1 */
  opdWeight: number;
  /** the optimizer's learning rate */
  learningRate: number;
  /** what is subtracted from each reward (TrainerOptions.rewardBaseline) */
  rewardBaseline: RewardBaseline;
  /** the OPD teacher: the base weights or the live policy, reading the hint */
  opdTeacher: OpdTeacher;
  /** β on answers trained by their reward alone (null: klCoef for every answer) */
  rewardKlCoef: number | null;
  /** top-K OPD distils an answer only until it has what the hint asks for */
  distillUntilMet: boolean;
  /** the learning rate's settle point under OPD alone (the other methods keep 0; trainer/options.ts, settle) */
  opdSettle: number;
  /** one line for logs and --help: what was picked and why */
  reason: string;
}

/**
 * Combine with top-K OPD and the self judge where the model reads (a chat template) and the engine
 * can score top-K: on stories260k-chat it gained a median +56/+46/+46/+34 points of held-out
 * satisfied-and-fluent on four personas against binary's +50/+38/+12/+18 (docs/benchmarks.md,
 * issue 12 session 8). Its regularisers compare whole distributions with the base's at every response
 * position: the exact reverse KL at β = 0.1 (k2's expected gradient without its sampling noise) and the
 * entropy guard at λ = 1. The guard is what keeps the text intact: the policy's samples had grown more
 * uncertain than the base's (median base log-likelihood −0.59 → −0.83 nats/token at KL ≈ 0.13), and at
 * T = 1 that spread is misspelt words. In-process, 3 seeds × 4 chat personas, the held-out gains went
 * from k2's +60/+52/+36/+32 at 82–90% fluent to +66/+66/+56/+52 at 92–100% (base 96%); through `serve`,
 * after the drain, +78/+64/+54/+40 at 92–96% (docs/benchmarks.md, issue 12 session 12). With the small self
 * judge's hint rules and combine distilling only hinted turns (session 14), in-process +76/+80/+90/+48 on another
 * build of the same recipe, where the earlier default gave +76/+38/+56/+10 and binary +82/+72/+66/+42. A model without
 * a chat template (stories260K) cannot read the hint OPD distils from, and there combine learned less than binary
 * (+4 against +10, lexical judge), so it keeps binary and the lexical judge, which needs no model.
 * Remote engines keep binary too: top-K OPD needs the embedded engine's top-K scoring, and token
 * OPD through them is unmeasured.
 */
export function recipeFor(t: ModelTraits): ModelRecipe {
  if (t.chatTemplate && t.embedded) {
    return { method: 'combine', opdMode: 'topk', judge: 'self', klCoef: CHAT_KL_COEF, binaryKlCoef: CHAT_BINARY_KL_COEF, klEstimator: 'full', entropyGuard: CHAT_ENTROPY_GUARD, loopGuard: CHAT_LOOP_GUARD, likelihoodGuard: CHAT_LIKELIHOOD_GUARD, repeatGuard: CHAT_REPEAT_GUARD, anchorAnswers: CHAT_ANCHOR_ANSWERS, tailGuard: CHAT_TAIL_GUARD, opdWeight: CHAT_OPD_WEIGHT, learningRate: CHAT_LEARNING_RATE, rewardBaseline: CHAT_REWARD_BASELINE, opdTeacher: CHAT_OPD_TEACHER, rewardKlCoef: CHAT_REWARD_KL_COEF, distillUntilMet: CHAT_DISTILL_UNTIL_MET, opdSettle: CHAT_OPD_SETTLE, reason: `a chat model on the embedded engine: combine with top-K OPD (the ${CHAT_OPD_TEACHER === 'policy' ? 'live policy' : 'base'} as teacher, w_opd ${CHAT_OPD_WEIGHT}${CHAT_DISTILL_UNTIL_MET ? ', each answer distilled until it meets the hint' : ''}), the self judge, the exact KL to base at β ${CHAT_KL_COEF} (${CHAT_REWARD_KL_COEF} on answers trained by their reward alone or approved by the judge, ${CHAT_BINARY_KL_COEF} for binary), the entropy guard at λ ${CHAT_ENTROPY_GUARD}, the loop guard ${CHAT_LOOP_GUARD}, the likelihood guard ${CHAT_LIKELIHOOD_GUARD}, the repeat guard ${CHAT_REPEAT_GUARD}, ${CHAT_ANCHOR_ANSWERS} anchor answers per stale batch, the tail guard at ${CHAT_TAIL_GUARD}, learning rate ${CHAT_LEARNING_RATE}, the ${CHAT_REWARD_BASELINE} reward baseline, β growing once the canary falls ${RECIPE.canaryBudget} nat/token below the base's, and under OPD alone the learning rate settling once ${CHAT_OPD_SETTLE * 100}% of recent answers please` };
  }
  const why = !t.chatTemplate ? 'no chat template (the model cannot read a hint)' : 'a remote engine (no top-K scoring)';
  return { method: RECIPE.method, opdMode: 'token', judge: 'lexical', klCoef: RECIPE.klCoef, binaryKlCoef: RECIPE.klCoef, klEstimator: RECIPE.klEstimator, entropyGuard: RECIPE.entropyGuard, loopGuard: RECIPE.loopGuard, likelihoodGuard: RECIPE.likelihoodGuard, repeatGuard: RECIPE.repeatGuard, anchorAnswers: RECIPE.anchorAnswers, tailGuard: RECIPE.tailGuard, opdWeight: 1, learningRate: RECIPE.learningRate, rewardBaseline: RECIPE.rewardBaseline, opdTeacher: 'base', rewardKlCoef: null, distillUntilMet: false, opdSettle: 0, reason: `${why}: ${RECIPE.method}, the lexical judge` };
}

/** β of the KL term a recipe gives a method. */
export function klCoefOf(r: Pick<ModelRecipe, 'klCoef' | 'binaryKlCoef'>, method: Method): number {
  return method === 'binary' ? r.binaryKlCoef : r.klCoef;
}

/** w_opd a recipe gives a method: its own for combine, 1 for OPD alone (measured there at 1) and binary (no such term). */
export function opdWeightOf(r: Pick<ModelRecipe, 'opdWeight'>, method: Method): number {
  return method === 'combine' ? r.opdWeight : 1;
}

/** The learning rate's settle point a recipe gives a method: its own under OPD alone, 0 (never) for binary and combine. */
export function settleOf(r: Pick<ModelRecipe, 'opdSettle'>, method: Method): number {
  return method === 'opd' ? r.opdSettle : 0;
}

/**
 * β on the answers trained by their reward alone: the flag; else the recipe's, while --kl-coef is left to the model too
 * (a β the user sets holds for every answer); else null (klCoef for every answer).
 */
export function rewardKlCoefOf(r: Pick<ModelRecipe, 'rewardKlCoef'>, flags: { klCoef?: number; rewardKlCoef?: number }): number | null {
  return flags.rewardKlCoef ?? (flags.klCoef === undefined ? r.rewardKlCoef : null);
}

/** Distillation until the hint is met: --distill-until-met or --no-distill-until-met, else the recipe's. */
export function distillUntilMetOf(r: Pick<ModelRecipe, 'distillUntilMet'>, flags: { on?: boolean; off?: boolean }): boolean {
  return flags.on ? true : flags.off ? false : r.distillUntilMet;
}

/** The flags whose default follows the model (options; switches with a --no- twin are left to it when neither is given). */
const MODEL_AWARE_FLAGS = ['method', 'judge', 'opd-mode', 'kl-coef', 'reward-kl-coef', 'kl-estimator', 'entropy-guard', 'loop-guard', 'likelihood-guard', 'repeat-guard', 'anchor-answers', 'tail-guard', 'opd-weight', 'learning-rate', 'opd-teacher', 'reward-baseline', 'settle'] as const;
const MODEL_AWARE_SWITCHES = ['distill-until-met'] as const;

/** Whether any choice that follows the model was left to it (then the commands say what was picked). */
export function leavesToModel(o: Partial<Record<(typeof MODEL_AWARE_FLAGS)[number], unknown> & Record<(typeof MODEL_AWARE_SWITCHES)[number] | `no-${(typeof MODEL_AWARE_SWITCHES)[number]}`, unknown>>): boolean {
  return MODEL_AWARE_FLAGS.some((k) => o[k] === undefined) || MODEL_AWARE_SWITCHES.some((k) => !o[k] && !o[`no-${k}`]);
}

/** `--reward-baseline` on the commands that train: its choices and help (learn/baseline.ts). */
export const REWARD_BASELINE_OPTION = {
  choices: REWARD_BASELINES,
  help: 'advantage baseline (recent: mean reward of the last 64 samples; lift: that mean while below 0, else 0)',
};

/** `--reward-kl-coef` on the commands that serve and benchmark personal learning. */
export const REWARD_KL_COEF_HELP = 'β of the KL-to-base term on answers trained by their reward alone (binary, combine\'s turns with nothing distilled, hindsight answers) and on distilled answers the judge approved; distilled answers it did not approve and anchor answers keep --kl-coef';
export const NO_DISTILL_UNTIL_MET_HELP = 'top-K OPD: distil every position of an answer, also after it has what the hint asks for';

/** `--kl-estimator` on every command that trains: its choices and help (learn/losses.ts, KlEstimator). */
export const KL_ESTIMATOR_OPTION = {
  choices: ['k3', 'k2', 'full'] as const,
  help: 'the KL term: k3 at the sampled tokens (gradient of the forward KL), k2 there (½(log π/π_base)²: gradient of the reverse KL), or full (the reverse KL summed over the vocabulary at each position; embedded engine)',
};

/** The help text of the options whose default follows the model. */
export const MODEL_AWARE_DEFAULT = {
  method: 'combine for a chat model on the embedded engine, else binary',
  opdMode: 'topk for a chat model on the embedded engine, else token',
  judge: 'self for a chat model on the embedded engine, else lexical',
  klCoef: `${CHAT_KL_COEF} for a chat model on the embedded engine (${CHAT_BINARY_KL_COEF} with --method binary), else ${RECIPE.klCoef}`,
  klEstimator: `full for a chat model on the embedded engine, else ${RECIPE.klEstimator}`,
  entropyGuard: `${CHAT_ENTROPY_GUARD} for a chat model on the embedded engine, else ${RECIPE.entropyGuard}`,
  learningRate: `${CHAT_LEARNING_RATE} for a chat model on the embedded engine, else ${RECIPE.learningRate}`,
  rewardBaseline: `${CHAT_REWARD_BASELINE} for a chat model on the embedded engine, else ${RECIPE.rewardBaseline}`,
  opdTeacher: `${CHAT_OPD_TEACHER} for a chat model on the embedded engine, else base`,
  loopGuard: `${CHAT_LOOP_GUARD} for a chat model on the embedded engine, else ${RECIPE.loopGuard}`,
  likelihoodGuard: `${CHAT_LIKELIHOOD_GUARD} for a chat model on the embedded engine, else ${RECIPE.likelihoodGuard}`,
  repeatGuard: `${CHAT_REPEAT_GUARD} for a chat model on the embedded engine, else ${RECIPE.repeatGuard}`,
  opdWeight: `${CHAT_OPD_WEIGHT} for combine with a chat model on the embedded engine, else 1`,
  anchorAnswers: `${CHAT_ANCHOR_ANSWERS} for a chat model on the embedded engine, else ${RECIPE.anchorAnswers}`,
  tailGuard: `${CHAT_TAIL_GUARD} for a chat model on the embedded engine, else ${RECIPE.tailGuard} (off)`,
  rewardKlCoef: `${CHAT_REWARD_KL_COEF} for a chat model on the embedded engine while --kl-coef is left to it, else --kl-coef`,
  distillUntilMet: `on for a chat model on the embedded engine (--no-distill-until-met turns it off), else off`,
  settle: `${CHAT_OPD_SETTLE} under --method opd for a chat model on the embedded engine, else 0 (never)`,
} as const;

/** `--opd-weight` on the commands that serve and benchmark personal learning. */
export const OPD_WEIGHT_HELP = 'w_opd: the weight of the distillation term in combine (and of OPD alone), next to the reward term\'s w_rl = 1';

/** `--loop-guard` on every command that trains. */
export const LOOP_GUARD_HELP = 'what a looping answer\'s reward becomes (a 3-token piece more than 3 times per 64 tokens, or one character more than 5 times in a row): withhold caps it at 0 (still above a baseline of mostly complaints), punish makes it −1 (under --method opd, which has no reward term, a −1 sample of its own), off keeps the judge\'s; under withhold or punish a looping answer is not distilled either';

/** `--likelihood-guard` on every command that trains. */
export const LIKELIHOOD_GUARD_HELP = 'what the reward of an answer the base model finds unlikely becomes (mean log-likelihood per token below the 5th percentile of the base\'s own answers to the first 64 judged requests, which the base answers once each to calibrate it): withhold caps it at 0, punish makes it −1, off keeps the judge\'s; under withhold or punish such an answer is not distilled either';

/** `--repeat-guard` on every command that trains. */
export const REPEAT_GUARD_HELP = `what the reward of an answer that repeats one of the last ${REPEAT_WINDOW} answers token for token becomes (whatever the request): withhold caps it at 0, so the first telling keeps its +1 and a retelling earns nothing, against a policy collapsing onto one answer (it thins such collapse, not ends it); punish makes it −1; off keeps the judge's; a repeat is still distilled`;

/** `--stale-distill` on the commands that train. */
export const KL_BUDGET_HELP = 'a KL budget in nats/token: while a training batch\'s mean KL to the base is over it, β of the KL term grows (up to 20× --kl-coef, 20% a step) and falls back as the KL comes under (default: none, β stays --kl-coef)';
export const CANARY_BUDGET_HELP = `the canary budget in nats/token: once fixed everyday text (the weights guard's canary) has fallen this far below the base model's log-likelihood of it, β of the KL term (--kl-coef and --reward-kl-coef alike) grows with the excess, ×(1 + ${CANARY_BUDGET_DEFAULTS.gain}·excess/budget) up to ${CANARY_BUDGET_DEFAULTS.maxFactor}×, so a long run on a met preference cannot walk the weights off (0 = off)`;
export const DISTILL_FADE_HELP = 'top-K OPD: the distilled term fades as the recent answers please the user: in full while at least this share of the last 64 judged answers miss, then in proportion, down to 0.2 of it (0 = never; 0.5 fades once half please); the KL and entropy terms do not fade';
export const SETTLE_HELP = 'the learning rate settles as the recent answers please the user: in full while at least this share of the last 64 judged answers miss, then in proportion, down to 0.2 of it (0 = never; 0.5 settles once half please), so a met preference is not walked away from by the steps\' noise; it comes back as soon as answers miss again';
export const LOOP_UNLIKELIHOOD_HELP = 'λ of the unlikelihood term −log(1 − p) on the tokens of a looping answer that repeat a 3-token piece past the loop guard\'s limit: where a −1 reward barely moves a loop the policy is sure of, this pushes those tokens down with a force of p (0 = off; the embedded engine only)';
export const TAIL_GUARD_HELP = 'tokens sampled with probability below this (their recorded sampling log-prob) are not reinforced: their positive advantage is 0, so an approved answer does not teach the misspelt pieces in it; negative advantages and the KL and entropy terms are unchanged (0 = off)';
export const DISTILL_UNTIL_MET_HELP = 'top-K OPD: distil each position of an answer only until the answer has what the hint asks for (every content word of the hint written); later positions are left out, where the hinted teacher only asks for more of it';
export const STALE_DISTILL_HELP = 'the distillation term of a sample drawn by an older version: full, prefix (each position weighted by how likely the current weights are to write the text before it, at most 1), or refresh (top-K OPD, two or more versions back: computed on the current weights\' answer to the same prompt, with the hint the user\'s reply gave, instead of on the old answer)';

/** `--anchor-answers` on the commands that train. */
export const ANCHOR_ANSWERS_HELP = 'when a batch holds answers sampled two or more versions back, the current weights answer up to N of their prompts, and those answers carry only the KL and entropy terms (0 = off)';

/** `--importance-cap` on the commands that train. */
export const IMPORTANCE_CAP_HELP = 'cap on the per-token importance weight (current / behaviour probability) that corrects samples drawn by older versions; 1 only ever weakens their push';

/** `--entropy-guard` on every command that trains. */
export const ENTROPY_GUARD_HELP = 'λ of the entropy guard: λ·max(0, H(π) − H(π_base)) at each response token, which stops the policy spreading mass onto the tail of the vocabulary (misspelt words at T = 1); 0 = off';
