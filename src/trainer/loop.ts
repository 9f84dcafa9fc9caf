// The learning loop: judged turns become samples (a durable queue in the store), samples become
// PPO steps on the LoRA adapter, steps become published weights versions — while the server keeps
// answering (training runs on the engine thread one micro-batch at a time, between decode steps).
//
// Crash safety: a step marks its samples trained and records itself in one transaction after the
// new version is published; a checkpoint (adapter + optimizer) follows every `checkpointEvery` steps.
// At start the latest checkpoint is loaded, and samples trained by steps after it — whose effect died
// with the process — go back to pending, so nothing acknowledged is lost or trained twice. A
// checkpoint that does not load is moved to checkpoints/quarantine/ and the previous one is used.
//
// Weights guard: the engine undoes an optimizer step that leaves non-finite weights or moves them
// by more than their own size; then the new version scores fixed canary texts, and a version whose
// log-probs are not finite or moved too far is never published — the trainer rolls back to its last
// checkpoint and the batch is set aside with the reason (learn/weights-guard.ts).
//
// Versions: each version is recorded in the store before it is published, and numbered above every
// version the store has seen, so clients never see a number twice or going backwards across crashes.
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Store, TurnRow } from '../store/store.ts';
import type { TrainingEngine, Datum } from '../engine/types.ts';
import { withHint } from '../learn/hint-prompt.ts';
import { buildSample, topkSample, atLeastOneSample, overlongPenalty, groupNormalise } from '../learn/advantages.ts';
import { acceptedHints, hintVoteOf } from '../learn/votes.ts';
import { distillSets, type DistillInput } from './distill.ts';
import type { WireMessage } from '../conversation/messages.ts';
import { Periodic } from '../util/periodic.ts';
import { recoverFolder } from '../util/atomic-folder.ts';
import { canaryMean, canaryVerdict, learningRateProblem } from '../learn/weights-guard.ts';
import { canaryKlFactor, CANARY_BUDGET_DEFAULTS } from '../learn/canary-budget.ts';
import { correctStaleness, cumulativeBuckets, prefixWeights, STALENESS_BUCKETS } from '../learn/staleness.ts';
import { rewardWindow, windowBaseline, liftBaseline, BASELINE_WINDOW } from '../learn/baseline.ts';
import { TRAINER_DEFAULTS, type TrainerOptions, type StepRecord } from './options.ts';
import { mergeContinuations } from '../learn/continuations.ts';
import { guardedReward, loops, loopExcess } from '../learn/loops.ts';
import { RecentAnswers } from '../learn/repeat-guard.ts';
import { LikelihoodFloor, unlikely } from '../learn/likelihood-guard.ts';
import { baseMeanLogLikelihood } from '../engine/base-likelihood.ts';
import { collect } from '../engine/types.ts';
import { hindsightData, hindsightPrompts, type EarlierTurn } from './hindsight.ts';
import { distillFade } from '../learn/distill-fade.ts';
import { guardTail } from '../learn/tail-guard.ts';
import { nextKlCoef, KL_BUDGET_DEFAULTS } from '../learn/kl-budget.ts';
import { klScales, takesRewardBeta } from '../learn/kl-scale.ts';
import { ANCHOR_STALENESS, anchorPicks, currentAnswer } from './current-answers.ts';

export { ANCHOR_STALENESS } from './current-answers.ts';

export { TRAINER_DEFAULTS, type TrainerOptions, type StepRecord } from './options.ts';

/** A pending sample with its turn's exact ids, as trainStep reads it. */
interface PendingRow {
  turn_id: number; method: string; kind: string; hint: string | null; request_json: string; reward: number | null; advantages: string; loss_mask: string; teacher_logprobs: string | null;
  behaviour_version: number; temperature: number; prompt_ids: string; response_ids: string; response_logprobs: string;
}

/** The OPD teacher prompt (built in learn/hint-prompt.ts; re-exported for existing callers). */
export { withHint } from '../learn/hint-prompt.ts';

/** Everyday texts whose log-probs must stay finite and move only gradually from version to version. */
const CANARY_TEXTS = [
  'Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog.',
  'The weather today is sunny and warm, so we went for a walk by the river.',
  'Hello! How can I help you today? Please tell me what you need.',
];

export class TrainerLoop {
  readonly o: TrainerOptions;
  private readonly store: Store;
  private readonly engine: TrainingEngine;
  private readonly periodic: Periodic;
  /** set by stop(): a tick with a backlog stops between steps */
  private stopping = false;
  version = 0;
  step = 0;
  lastStep: StepRecord | null = null;
  /** β of the KL term for the next step: klCoef, or above it while the policy is over its KL budget */
  klCoef: number;
  counts = { trained: 0, stale: 0, rejected: 0, rolledBack: 0, skipped: 0, looping: 0, unlikely: 0, repeats: 0, tailTokens: 0 };
  /** the repeat guard's window of recent answers (filled from the store at start) */
  private readonly recentAnswers: RecentAnswers;
  /** the likelihood guard's floor, calibrated on the base's own answers to the first judged requests */
  readonly likelihoodFloor: LikelihoodFloor;
  /** steps skipped as no-ops (no gradient signal: nothing to publish) */
  noOpSteps = 0;
  /** staleness of every trained sample since the start, as cumulative counts per STALENESS_BUCKETS bound (+Inf last) */
  readonly stalenessBuckets = new Array<number>(STALENESS_BUCKETS.length + 1).fill(0);
  stalenessSum = 0;
  /** the canary's log-probs under the published version */
  private lastCanary: number[][] | null = null;
  /** the canary's mean log-prob per token under the base weights (the canary budget's reference; null when off) */
  private baseCanaryMean: number | null = null;
  private canaryRequests: { promptIds: number[]; responseIds: number[] }[] | null = null;
  /** serialises steps with rollbacks (see exclusive) */
  private lock: Promise<unknown> = Promise.resolve();

  constructor(store: Store, engine: TrainingEngine, o: Partial<TrainerOptions> & { checkpointDir: string }) {
    this.store = store;
    this.engine = engine;
    this.o = { ...TRAINER_DEFAULTS, ...o };
    const lr = learningRateProblem(this.o.learningRate);
    if (lr) throw new RangeError(lr);
    if (this.o.opdTeacher === 'both' && this.o.method !== 'binary' && this.o.opdMode !== 'topk') throw new RangeError('--opd-teacher both needs top-K OPD (--opd-mode topk): token OPD has one teacher log-prob a token');
    if (!(Number.isFinite(this.o.canaryBudget) && this.o.canaryBudget >= 0)) throw new RangeError(`the canary budget must be a number ≥ 0 nats/token (0 = off), got ${this.o.canaryBudget}`);
    if (this.o.klBudget !== null && !(this.o.klBudget > 0)) throw new RangeError(`the KL budget must be > 0 nats/token, got ${this.o.klBudget}`);
    this.klCoef = this.o.klCoef;
    this.likelihoodFloor = new LikelihoodFloor(this.o.likelihoodFloor);
    this.recentAnswers = new RecentAnswers(this.o.repeatWindow);
    this.periodic = new Periodic(() => this.tick(), this.o.pollMs, (e) => (this.o.error ?? this.o.log)(`trainer: ${(e as Error).stack ?? e}`));
  }

  private get checkpoint(): string { return join(this.o.checkpointDir, 'latest'); }
  private get previousCheckpoint(): string { return `${this.checkpoint}.previous`; }

  /** Resume from the latest good checkpoint (or start a fresh adapter), and publish it as a new version. */
  async init(): Promise<void> {
    const repaired = recoverFolder(this.checkpoint, { previous: this.previousCheckpoint });
    if (repaired) this.o.log(`trainer: checkpoint folder: ${repaired}`);
    const loaded = await this.loadCheckpoint();
    if (!loaded) await this.engine.configureTraining(this.o.lora);
    this.step = loaded?.step ?? 0;
    this.requeueAfter(this.step);
    // a version above every one the store has seen, unless this is the very first start
    const floor = this.store.versionFloor();
    if (loaded || floor > 0) {
      const version = await this.engine.saveWeights({ atLeast: floor + 1 });
      this.store.recordVersion(version, this.step, loaded ? 'resume' : 'fresh');
      await this.engine.publish(version);
      this.version = version;
    }
    this.lastCanary = await this.canary(this.version);
    if (this.o.canaryBudget > 0 && (this.o.klCoef > 0 || (this.o.rewardKlCoef ?? 0) > 0)) {
      // the base's canary once per start: β's multiple then follows the published version's (stateless, so a restart
      // takes it up where it was)
      try {
        this.baseCanaryMean = canaryMean(await this.canary('base'));
      } catch (e) {
        this.o.log(`trainer: the canary budget is off: the engine cannot score with the base weights (${(e as Error).message})`);
      }
    }
    if (this.o.klBudget !== null) this.klCoef = this.klCoefFromSteps(this.o.klBudget);
    if (this.o.likelihoodGuard !== 'off') {
      const calibration = this.store.sql(`SELECT base_mean FROM likelihood_calibration ORDER BY turn_id LIMIT ?`).all(this.o.likelihoodFloor.maxSamples) as { base_mean: number }[];
      for (const r of calibration) this.likelihoodFloor.add(r.base_mean);
      if (calibration.length) this.o.log(`trainer: likelihood floor from ${calibration.length} recorded base answers${this.likelihoodFloor.floor !== null ? ` (${this.likelihoodFloor.floor.toFixed(3)} nats/token)` : ''}`);
    }
    if (this.o.repeatGuard !== 'off') {
      // the window as it stood: the last answers that became samples, oldest first
      const recent = this.store.sql(`SELECT t.response_ids FROM samples s JOIN turns t ON t.id = s.turn_id ORDER BY s.turn_id DESC LIMIT ?`).all(this.o.repeatWindow) as { response_ids: string }[];
      for (const r of recent.reverse()) this.recentAnswers.seenThenAdd(this.store.decodeIds(r.response_ids));
    }
    if (loaded) this.o.log(`trainer: resumed at step ${this.step} from ${loaded.from} (saved as version ${loaded.version}), serving it as version ${this.version}`);
  }

  /** How far the published version's canary is below the base's (nats per token; NaN when the budget is off). */
  canaryFall(): number {
    return this.baseCanaryMean === null || !this.lastCanary ? Number.NaN : this.baseCanaryMean - canaryMean(this.lastCanary);
  }

  /** β's multiple under the canary budget (1 while the canary is within it, or the budget is off) */
  canaryFactor(): number {
    return canaryKlFactor(this.canaryFall(), { ...CANARY_BUDGET_DEFAULTS, budget: this.o.canaryBudget });
  }

  /** β on answers trained by their reward alone, following the KL budget's scaling of klCoef */
  private rewardKlCoef(): number {
    const r = this.o.rewardKlCoef ?? this.o.klCoef;
    return this.o.klCoef > 0 ? r * (this.klCoef / this.o.klCoef) : r;
  }

  /** β under the KL budget after the recorded steps (the store keeps each step's KL, so a restart goes on where it was). */
  private klCoefFromSteps(target: number): number {
    const kls = (this.store.sql(`SELECT kl FROM training_steps WHERE status != 'lost' AND kl IS NOT NULL ORDER BY id`).all() as { kl: number }[]).map((r) => r.kl);
    return kls.reduce((beta, kl) => nextKlCoef(beta, kl, this.o.klCoef, { ...KL_BUDGET_DEFAULTS, target }), this.o.klCoef);
  }

  /** Load latest, else previous; a checkpoint that fails to load is quarantined with a message. */
  private async loadCheckpoint(): Promise<{ step: number; version: number; from: string } | null> {
    for (const dir of [this.checkpoint, this.previousCheckpoint]) {
      if (!existsSync(dir)) continue;
      try {
        const version = await this.engine.loadTrainingState(dir);
        const step = (await this.engine.versions()).optimizerStep ?? 0;
        return { step, version, from: dir };
      } catch (e) {
        const to = join(this.o.checkpointDir, 'quarantine', `${dir.split('/').pop()}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
        mkdirSync(join(this.o.checkpointDir, 'quarantine'), { recursive: true });
        renameSync(dir, to);
        this.o.log(`trainer: WARNING: the checkpoint ${dir} cannot be loaded (${(e as Error).message}); moved it to ${to}`);
      }
    }
    if (existsSync(join(this.o.checkpointDir, 'quarantine')) && this.store.versionFloor() > 0) {
      this.o.log('trainer: WARNING: no usable checkpoint: training starts again from a fresh adapter');
    }
    return null;
  }

  /** Samples trained by steps after `step` (whose effect was lost) go back to the queue. */
  private requeueAfter(step: number, why = 'lost in a restart'): number {
    const reset = Number(this.store.sql(`UPDATE samples SET status = 'pending', step = NULL, reason = ? WHERE status = 'trained' AND step > ?`)
      .run(`step ${why}; trained again`, step).changes);
    this.store.sql(`UPDATE training_steps SET status = 'lost' WHERE status = 'published' AND step > ?`).run(step);
    if (reset) this.o.log(`trainer: ${reset} sample(s) from steps after ${step} (${why}) queued again`);
    return reset;
  }

  /** Take the published version's canary as the baseline again (after a version was published outside trainStep). */
  async refreshCanary(): Promise<void> { this.lastCanary = await this.canary(this.version); }

  /** Canary requests: fixed everyday texts, split into a prompt and a scored continuation. */
  private canaryBatch(): { promptIds: number[]; responseIds: number[] }[] {
    if (this.canaryRequests) return this.canaryRequests;
    const max = this.engine.info.contextLength;
    this.canaryRequests = CANARY_TEXTS.map((text) => this.engine.tokenizer.encode(text).slice(0, max))
      .filter((ids) => ids.length >= 2)
      .map((ids) => { const cut = Math.max(1, Math.floor(ids.length / 3)); return { promptIds: ids.slice(0, cut), responseIds: ids.slice(cut) }; });
    return this.canaryRequests;
  }

  private async canary(version: number | 'base'): Promise<number[][]> {
    const batch = this.canaryBatch();
    if (batch.length === 0) return [];
    return (await this.engine.score(batch, { adapter: version })).map((a) => Array.from(a));
  }

  start(): void { this.stopping = false; this.periodic.start(); }

  /** null while the loop runs and succeeds (see Periodic.health). */
  health(): string | null { return this.periodic.health(); }

  /** Stop after the step in progress, and checkpoint. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.periodic.stop();
    if (this.step > 0) await this.engine.saveTrainingState(this.checkpoint);
  }

  /** Build samples for newly judged turns, then train every full batch. Returns the steps taken. */
  async tick(): Promise<number> {
    await this.buildSamples();
    let steps = 0;
    while (!this.stopping && this.pendingCount() >= this.o.batchSize) { await this.exclusive(() => this.trainStep()); steps++; }
    return steps;
  }

  pendingCount(): number {
    return Number((this.store.sql(`SELECT COUNT(*) AS n FROM samples WHERE status = 'pending'`).get() as { n: number }).n);
  }

  private judgedTurns(): (TurnRow & { score: number; hint: string | null; votes_json: string })[] {
    return this.store.sql(`SELECT t.*, j.score AS score, j.hint AS hint, j.votes_json AS votes_json FROM turns t JOIN judgements j ON j.turn_id = t.id
      LEFT JOIN samples s ON s.turn_id = t.id WHERE j.status = 'done' AND s.turn_id IS NULL ORDER BY t.id`).all() as never;
  }

  async buildSamples(): Promise<number> {
    let built = 0;
    for (const turn of this.judgedTurns()) {
      const request = JSON.parse(turn.request_json) as { messages: WireMessage[]; tools: unknown; params: { temperature: number }; templateKwargs: Record<string, unknown> };
      const responseIds = this.store.decodeIds(turn.response_ids);
      const behaviour = JSON.parse(turn.response_logprobs) as number[];
      const temperature = request.params.temperature > 0 ? request.params.temperature : 1;
      let reward: number | null = turn.score;
      if (reward !== null && this.o.overlong) reward = Math.max(-1, Math.min(1, reward + overlongPenalty(responseIds.length, this.o.overlong.lMax, this.o.overlong.lCache)));
      // the loop guard: a looping answer is neither reinforced nor distilled (the hinted teacher would teach its loop on)
      const looping = reward !== null && this.o.loopGuard !== 'off' && loops(responseIds, this.engine.tokenizer.decode(responseIds, true));
      if (looping) this.counts.looping++;
      reward = guardedReward(reward, looping, this.o.loopGuard);
      // the likelihood guard: an answer the base finds less likely than nearly all of its own is not reinforced or distilled either
      const broken = !looping && reward !== null && this.o.likelihoodGuard !== 'off' && await this.unlikelyAnswer(turn, request.params, responseIds);
      if (broken) this.counts.unlikely++;
      reward = guardedReward(reward, broken, this.o.likelihoodGuard);
      // the repeat guard: a word-for-word retelling of a recent answer earns no more than 0 (the first telling had its +1)
      const repeated = this.o.repeatGuard !== 'off' && this.recentAnswers.seenThenAdd(responseIds) && reward !== null;
      if (repeated && reward! > 0) this.counts.repeats++;
      reward = guardedReward(reward, repeated, this.o.repeatGuard);
      const guarded = looping || broken;
      const topk = this.o.opdMode === 'topk' && this.o.method !== 'binary';
      let teacher: number[] | null = null;
      if (!topk && this.o.method !== 'binary' && turn.hint && !guarded) {
        const promptIds = this.engine.tokenizer.encodeChat(withHint(request.messages, turn.hint), { tools: (request.tools ?? undefined) as never, templateKwargs: request.templateKwargs });
        if (promptIds.length + responseIds.length - 1 <= this.engine.info.contextLength) {
          [teacher] = (await this.engine.score([{ promptIds, responseIds }], { temperature, adapter: this.o.opdTeacher === 'base' ? 'base' : 'current' })).map((a) => Array.from(a));
        }
      }
      const hints = topk && !guarded ? this.hintCandidates(turn) : [];
      let sample = topk ? topkSample(this.o.method, reward, hints.length > 0, responseIds.length, this.o.weights.rl) : buildSample(this.o.method, { reward, teacher, behaviour }, this.o.weights, this.o.opdClip);
      let kind: string = sample?.kind ?? 'none';
      // OPD alone has no reward term to carry the guard's −1: a looping answer becomes a sample of its own ('loop', −1 on
      // every token, outside the reward baseline, which would cancel it when every reward in the window is one)
      if (!sample && looping && this.o.method === 'opd' && this.o.loopGuard === 'punish') {
        sample = { advantages: new Array(responseIds.length).fill(-1), lossMask: new Array(responseIds.length).fill(1), kind: 'binary' };
        kind = 'loop';
      }
      if (!sample && this.o.keepNeutral && this.sessionHasNoSample(turn.session_id)) { sample = atLeastOneSample(responseIds.length); kind = 'neutral'; }
      this.store.sql(`INSERT INTO samples (turn_id, method, kind, reward, hint, advantages, loss_mask, teacher_logprobs, behaviour_version, temperature, status, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(turn.id, this.o.method, kind, reward, topk ? (hints.length ? JSON.stringify(hints) : null) : turn.hint, JSON.stringify(sample?.advantages ?? []),
        JSON.stringify(sample?.lossMask ?? []), teacher ? JSON.stringify(teacher) : null, Math.max(0, turn.policy_version), temperature, sample ? 'pending' : 'none', Date.now());
      built++;
    }
    return built;
  }

  /**
   * Whether a judged answer is below the likelihood floor. While the floor is calibrating, the base also answers the
   * turn's exact prompt once (seeded by the turn, at the turn's temperature and length limit) and that answer's mean
   * log-likelihood joins the floor; answers judged before the floor exists pass.
   */
  private async unlikelyAnswer(turn: { id: number; prompt_ids: string }, params: { temperature?: number; maxTokens?: number }, responseIds: number[]): Promise<boolean> {
    const promptIds = this.store.decodeIds(turn.prompt_ids);
    if (this.likelihoodFloor.calibrating) {
      const room = this.engine.info.contextLength - promptIds.length;
      const maxTokens = Math.min(room, params.maxTokens && params.maxTokens > 0 ? params.maxTokens : Math.max(1, responseIds.length));
      if (maxTokens > 0) {
        const base = await collect(this.engine.sample(promptIds, { maxTokens, temperature: params.temperature ?? 1, topP: 1, topK: 0, seed: 0x5eed + turn.id, weights: 'base', priority: 'low' }));
        const mean = await baseMeanLogLikelihood(this.engine, promptIds, base.ids);
        if (Number.isFinite(mean)) this.store.sql(`INSERT OR REPLACE INTO likelihood_calibration (turn_id, base_mean, created_at) VALUES (?, ?, ?)`).run(turn.id, mean, Date.now());
        this.likelihoodFloor.add(mean);
      }
    }
    const floor = this.likelihoodFloor.floor;
    return floor !== null && unlikely(await baseMeanLogLikelihood(this.engine, promptIds, responseIds), floor);
  }

  /** A turn's hint candidates for top-K OPD: every accepted hint vote (≤ maxCandidates, shortest first), else the judge's chosen hint. */
  private hintCandidates(turn: { hint: string | null; votes_json: string }): string[] {
    let votes: { kind?: string; score?: number | null; hint?: string | null }[] = [];
    try { votes = JSON.parse(turn.votes_json); } catch { /* a judgement without readable votes still has its chosen hint */ }
    const accepted = acceptedHints(votes.filter((v) => v.kind === 'hint').map(hintVoteOf), this.o.topk.maxCandidates);
    return accepted.length ? accepted : turn.hint ? [turn.hint] : [];
  }

  private sessionHasNoSample(sessionId: string): boolean {
    return !this.store.sql(`SELECT 1 FROM samples s JOIN turns t ON t.id = s.turn_id WHERE t.session_id = ? AND s.status != 'none' LIMIT 1`).get(sessionId);
  }

  private async trainStep(): Promise<void> {
    const t0 = performance.now();
    const rows = this.store.sql(`SELECT s.*, t.prompt_ids, t.response_ids, t.response_logprobs, t.request_json FROM samples s JOIN turns t ON t.id = s.turn_id
      WHERE s.status = 'pending' ORDER BY s.turn_id LIMIT ?`).all(this.o.batchSize) as unknown as PendingRow[];
    // the exact ids (stored encrypted under --redact all)
    const promptIdsOf = new Map(rows.map((r) => [r.turn_id, this.store.decodeIds(r.prompt_ids)]));
    const limit = this.o.maxStaleness ?? null;
    const fresh = limit === null ? rows : rows.filter((r) => this.version - r.behaviour_version <= limit);
    const stale = limit === null ? [] : rows.filter((r) => this.version - r.behaviour_version > limit);
    if (stale.length) {
      const mark = this.store.sql(`UPDATE samples SET status = 'stale', reason = ? WHERE turn_id = ?`);
      for (const r of stale) mark.run(`sampled by version ${r.behaviour_version}, ${this.version - r.behaviour_version} versions behind (limit ${limit})`, r.turn_id);
      this.counts.stale += stale.length;
      if (fresh.length < this.o.batchSize) return; // refill the batch on the next round
    }
    const shifted = this.baselineShifts(fresh, promptIdsOf);
    // the recent rewards the fade and the settling read, queried once a step
    let recentRewards: number[] | undefined;
    const recent = () => (recentRewards ??= this.recentRewards(fresh));
    let data: Datum[] = fresh.map((r) => {
      // the reward term after the baseline replaces the raw reward inside each token's advantage
      const t = this.rewardTerm(r, shifted);
      const shift = t === null ? 0 : this.o.weights.rl * (t - r.reward!);
      return {
        promptIds: promptIdsOf.get(r.turn_id)!, responseIds: this.store.decodeIds(r.response_ids), behaviourLogprobs: JSON.parse(r.response_logprobs),
        advantages: t === null ? JSON.parse(r.advantages) : (JSON.parse(r.advantages) as number[]).map((a) => a + shift),
        lossMask: JSON.parse(r.loss_mask), teacherLogprobs: r.teacher_logprobs ? JSON.parse(r.teacher_logprobs) : undefined, temperature: r.temperature,
      };
    });
    const ids = fresh.map((r) => r.turn_id);
    const staleness = fresh.map((r) => Math.max(0, this.version - r.behaviour_version));
    let distillNote = '', tailNote = '';
    if (this.o.tailGuard > 0) {
      const before = this.counts.tailTokens;
      data = data.map((d) => (d.advantages && d.behaviourLogprobs ? { ...d, advantages: this.tailGuarded(d.advantages, d.behaviourLogprobs) } : d));
      const zeroed = this.counts.tailTokens - before;
      if (zeroed) tailNote = `, ${zeroed} tail token(s) not reinforced`;
    }
    // the unlikelihood term on a looping answer's repeats past the limit: the loop the −1 reward barely moves
    let loopNote = '';
    if (this.o.loopUnlikelihood > 0 && this.o.loopGuard !== 'off') {
      let tokens = 0;
      data = data.map((d) => {
        const excess = loopExcess(d.responseIds);
        const n = excess.reduce((s, x) => s + x, 0);
        if (n === 0) return d;
        tokens += n;
        return { ...d, unlikelihood: excess.map((x) => x * this.o.loopUnlikelihood) };
      });
      if (tokens) loopNote = `, unlikelihood on ${tokens} looping token(s)`;
    }
    // --stale-distill refresh: a stale turn's distillation set is computed on the current weights' answer to its prompt
    const refreshed = new Map<number, Datum>();
    if (this.o.opdMode === 'topk' && this.o.method !== 'binary') {
      // only samples with hints get a distillation set. A rewarded turn without one used to get the teacher on its own
      // prompt in combine: with the base as teacher that pulled every approved answer back towards the base at full OPD
      // weight, and combine learned less than binary or OPD alone (+70/+48/+50/+20 against +80/+90/+48 on
      // cat/frog/bear without it; docs/benchmarks.md, issue 12 session 14)
      const wants = fresh.map((r) => r.kind === 'opd' || r.kind === 'combine');
      const inputs: DistillInput[] = [], at: number[] = [];
      for (let i = 0; i < fresh.length; i++) {
        if (!wants[i]) continue;
        const r = fresh[i], hints = r.hint ? JSON.parse(r.hint) as string[] : [];
        const now = this.o.staleDistill === 'refresh' && hints.length && staleness[i] >= ANCHOR_STALENESS ? await currentAnswer(this.engine, data[i], r.turn_id) : null;
        if (now) refreshed.set(i, now);
        inputs.push({ promptIds: data[i].promptIds, responseIds: (now ?? data[i]).responseIds, temperature: r.temperature, request: JSON.parse(r.request_json), hints });
        at.push(i);
      }
      const fade = this.o.distillFade > 0 ? distillFade(recent(), this.o.distillFade) : 1;
      const { sets, stats } = await distillSets(this.engine, inputs, { k: this.o.topk.k, selection: this.o.topk.selection, advantageClip: this.o.opdClip, weight: this.o.weights.opd * fade, teacher: this.o.opdTeacher, set: this.o.topk.set, untilMet: this.o.distillUntilMet });
      sets.forEach((set, j) => { if (set) (refreshed.get(at[j]) ?? data[at[j]]).distill = set; });
      if (stats.samples) distillNote = `, top-${this.o.topk.k} OPD on ${stats.samples}${refreshed.size ? ` (${refreshed.size} on the current weights' answers)` : ''} (${stats.candidates} teacher passes${stats.tooLong ? `, ${stats.tooLong} too long` : ''}, overlap ${stats.overlapMean.toFixed(2)}, |teacher − old| ${stats.gapMean.toFixed(2)}${this.o.topk.set === 'union' ? `, +${stats.joined.toFixed(2)} teacher ids a position` : ''}${this.o.distillUntilMet ? `, ${stats.afterMet} positions after the hint was met left out` : ''}${this.o.distillFade > 0 ? `, faded to ${fade.toFixed(2)}` : ''})`;
    }
    // a step without gradient signal would only move the weights by optimizer momentum: take none, publish nothing
    if (this.klCoef === 0 && (this.o.rewardKlCoef ?? 0) === 0 && this.o.entropyGuard === 0 && [...data, ...refreshed.values()].every((d) => !d.distill && (d.advantages ?? []).every((a, i) => a === 0 || d.lossMask?.[i] === 0))) {
      const why = 'no learning signal in the batch (every advantage 0): no step taken, no version published';
      this.store.transaction(() => {
        const mark = this.store.sql(`UPDATE samples SET status = 'skipped', reason = ? WHERE turn_id = ?`);
        for (const id of ids) mark.run(why, id);
      });
      this.counts.skipped += ids.length;
      this.noOpSteps++;
      this.o.log(`trainer: ${ids.length} samples without signal set aside; ${why}`);
      return;
    }
    const hindsight = this.o.hindsight ? await this.hindsightFor(fresh, shifted) : [];
    const anchors = await this.anchorAnswers(data, staleness, ids, new Set(refreshed.keys()));
    const correction = this.o.staleCorrection === 'decoupled' ? await this.correctStale(data, staleness) : { data, weightMean: null, truncatedShare: null, distillWeightMean: null };
    if (correction.distillWeightMean !== null) distillNote += `, stale contexts distilled at weight ${correction.distillWeightMean.toFixed(2)}`;
    data = correction.data;
    // data[i] is still fresh[i]'s answer here (merging below builds new ones, none of them distilled)
    const approved = new Set(data.filter((_, i) => (fresh[i].reward ?? 0) > 0));
    let mergeNote = '';
    if (this.o.mergeTurns) {
      const m = mergeContinuations(data);
      if (m.merged) mergeNote = `, ${m.merged} turns merged into their episodes' earlier turns`;
      data = m.data;
    }
    // β follows what trains each answer: its reward alone or the judge's approval (the batch's own answers, hindsight),
    // or the hinted teacher and the regularisers (distilled answers not approved, refreshed ones, anchors)
    const rewardTrained = [...data.map((d) => takesRewardBeta({ distilled: Boolean(d.distill || d.teacherLogprobs), approved: approved.has(d) })), ...hindsight.map(() => true), ...[...refreshed.values(), ...anchors].map(() => false)];
    data = [...data, ...hindsight, ...refreshed.values(), ...anchors];
    const factor = this.canaryFactor(), beta = this.klCoef * factor;
    const betas = this.o.rewardKlCoef === null || this.o.method === 'opd' ? null : klScales(beta, this.rewardKlCoef() * factor, rewardTrained);
    if (betas) data = data.map((d, i) => (betas.scales[i] === 1 ? d : { ...d, klScale: betas.scales[i] }));
    const canaryNote = factor > 1 ? `, β ×${factor.toFixed(2)} (canary ${this.canaryFall().toFixed(2)} nats/token below the base's, budget ${this.o.canaryBudget})` : '';
    if (hindsight.length) distillNote += `, ${hindsight.length} hindsight answer(s)`;
    if (anchors.length) distillNote += `, ${anchors.length} anchor answer(s)`;
    const fb = await this.engine.forwardBackward(data, { kind: 'ppo', clipLow: this.o.clipLow, clipHigh: this.o.clipHigh, klCoef: betas?.spec ?? beta, klEstimator: this.o.klEstimator, entropyGuard: this.o.entropyGuard });
    const stepKlCoef = this.klCoef;
    if (this.o.klBudget !== null) this.klCoef = nextKlCoef(this.klCoef, fb.kl, this.o.klCoef, { ...KL_BUDGET_DEFAULTS, target: this.o.klBudget });
    // settling reuses the fade's scale: a share of misses over the same recent window
    const settled = this.o.settle > 0 ? distillFade(recent(), this.o.settle) : 1;
    const learningRate = (this.o.learningRateAt?.(this.step + 1) ?? this.o.learningRate) * settled;
    const opt = await this.engine.optimStep({ learningRate, gradClipNorm: this.o.gradClipNorm });
    const rewards = fresh.map((r) => r.reward).filter((x): x is number => x !== null);
    const record: StepRecord = {
      step: null, status: 'rejected', version: null, samples: fresh.length, tokens: fb.tokens, loss: fb.loss, rewardMean: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
      clipFraction: fb.clipFraction, kl: fb.kl, ...(fb.entropyExcess !== undefined ? { entropyExcess: fb.entropyExcess } : {}), teacherGap: fb.teacherBehaviourGap, gradNorm: opt.gradNorm,
      stalenessMean: staleness.reduce((a, b) => a + b, 0) / Math.max(1, staleness.length), durationMs: 0,
      stalenessMax: Math.max(0, ...staleness), importanceWeightMean: correction.weightMean ?? fb.meanRatio, importanceTruncated: correction.truncatedShare,
    };
    if (opt.skipped) {
      // the adapter is unchanged: set the batch aside with the reason and go on from the last good version
      record.durationMs = performance.now() - t0;
      this.store.transaction(() => {
        const mark = this.store.sql(`UPDATE samples SET status = 'rejected', reason = ? WHERE turn_id = ?`);
        for (const id of ids) mark.run(opt.reason ?? 'rejected', id);
        this.insertStep(record, opt.reason ?? null);
      });
      this.counts.rejected += ids.length;
      this.lastStep = record;
      await this.afterStep(record);
      this.o.log(`trainer: step rejected (${opt.reason}); ${ids.length} samples set aside`);
      return;
    }
    const version = await this.engine.saveWeights({ atLeast: this.store.versionFloor() + 1 });
    const canary = await this.canary(version);
    const verdict = canaryVerdict(canary, this.lastCanary, this.engine.info.vocabSize, this.o.maxCanaryDrop);
    if (verdict.reason) { await this.rollBack(record, ids, opt.step, verdict.reason, t0); return; }
    this.store.recordVersion(version, opt.step, 'step');
    await this.engine.publish(version);
    this.version = version;
    this.lastCanary = canary;
    this.step = opt.step;
    record.step = opt.step; record.status = 'published'; record.version = version; record.durationMs = performance.now() - t0;
    this.store.transaction(() => {
      const mark = this.store.sql(`UPDATE samples SET status = 'trained', step = ? WHERE turn_id = ?`);
      for (const id of ids) mark.run(opt.step, id);
      this.insertStep(record, null);
    });
    this.counts.trained += ids.length;
    this.countStaleness(staleness);
    this.lastStep = record;
    if (this.step % this.o.checkpointEvery === 0) await this.engine.saveTrainingState(this.checkpoint);
    await this.afterStep(record);
    this.o.log(`trainer: step ${opt.step} → version ${version} (${ids.length} samples, ${fb.tokens} tokens, loss ${fb.loss.toFixed(4)}, reward ${record.rewardMean?.toFixed(2) ?? '–'}, clip ${(fb.clipFraction * 100).toFixed(1)}%, canary ${verdict.mean.toFixed(2)} nats/token${fb.kl !== null ? `, KL ${fb.kl.toFixed(3)}` : ''}${this.o.klBudget !== null ? ` (β ${stepKlCoef.toFixed(3)}, budget ${this.o.klBudget})` : ''}${canaryNote}${(record.stalenessMax ?? 0) > 0 ? `, ${(record.stalenessMean ?? 0).toFixed(1)} versions behind (importance weight ${record.importanceWeightMean?.toFixed(2) ?? '–'})` : ''}${distillNote}${tailNote}${loopNote}${mergeNote}${this.o.learningRateAt || this.o.settle > 0 ? `, lr ${learningRate.toExponential(2)}` : ''}, ${record.durationMs.toFixed(0)} ms)`);
  }

  /**
   * The batch's rewards and those of the most recently judged answers before it, up to the baseline's window: every
   * judged answer, also one that became no sample. Under OPD alone an approved answer with no hint is no sample, so a
   * window of samples alone held little but the hinted misses, and the fade and the settling it drives never began.
   */
  private recentRewards(batch: PendingRow[]): number[] {
    const now = batch.map((r) => r.reward).filter((x): x is number => x !== null);
    return rewardWindow(now, this.earlierRewards('any'), BASELINE_WINDOW);
  }

  /** The rewards of the most recently judged answers of these sample kinds ('any': every one), outside the pending batch, newest first. */
  private earlierRewards(kinds: readonly string[] | 'any'): number[] {
    const ofKind = kinds === 'any' ? '' : `AND kind IN (${kinds.map(() => '?').join(', ')})`;
    return (this.store.sql(`SELECT reward FROM samples WHERE reward IS NOT NULL ${ofKind} AND status != 'pending'
      ORDER BY turn_id DESC LIMIT ?`).all(...(kinds === 'any' ? [] : kinds), BASELINE_WINDOW) as { reward: number }[]).map((x) => x.reward);
  }

  /** The reward term each rewarded sample gets instead of its raw r (see rewardBaseline), by turn id. */
  private baselineShifts(rows: PendingRow[], promptIdsOf: Map<number, number[]>): Map<number, number> {
    const rewarded = rows.filter((r) => r.reward !== null && (r.kind === 'binary' || r.kind === 'combine'));
    const shifted = new Map<number, number>();
    const windowed = this.o.rewardBaseline === 'recent' || this.o.rewardBaseline === 'lift';
    if ((this.o.rewardBaseline === 'batch' && rewarded.length > 1) || (windowed && rewarded.length > 0)) {
      const batch = rewarded.map((r) => r.reward!);
      const earlier = windowed ? this.earlierRewards(['binary', 'combine']) : [];
      const mean = (this.o.rewardBaseline === 'lift' ? liftBaseline : windowBaseline)(batch, earlier, windowed ? BASELINE_WINDOW : batch.length);
      for (const r of rewarded) shifted.set(r.turn_id, r.reward! - mean);
    } else if (this.o.rewardBaseline === 'group') {
      const groups = new Map<string, typeof rewarded>();
      for (const r of rewarded) { const key = promptIdsOf.get(r.turn_id)!.join(','); groups.set(key, [...(groups.get(key) ?? []), r]); }
      for (const g of groups.values()) if (g.length > 1) groupNormalise(g.map((r) => r.reward!)).forEach((v, i) => shifted.set(g[i].turn_id, v));
    }
    return shifted;
  }

  /**
   * Anchor answers (TrainerOptions.anchorAnswers; trainer/current-answers.ts): the current weights answer the prompts of
   * the batch's stalest samples (at least ANCHOR_STALENESS versions behind, none of `refreshed`) once each, with zero
   * advantages — only the KL and entropy terms act on them, so none are drawn when both are off. `data`, `staleness` and
   * `turnIds` are the batch's, index for index.
   */
  private async anchorAnswers(data: readonly Datum[], staleness: readonly number[], turnIds: readonly number[], refreshed: ReadonlySet<number>): Promise<Datum[]> {
    if (this.o.anchorAnswers === 0 || (this.klCoef === 0 && this.o.entropyGuard === 0)) return [];
    const out: Datum[] = [];
    for (const i of anchorPicks(staleness, this.o.anchorAnswers, refreshed)) {
      const a = await currentAnswer(this.engine, data[i], turnIds[i]);
      if (a) out.push(a);
    }
    return out;
  }

  /** A rewarded sample's reward term after the baseline, negative ones scaled by negativeWeight (null: no reward term). */
  private rewardTerm(r: PendingRow, shifted: Map<number, number>): number | null {
    if (r.reward === null || (r.kind !== 'binary' && r.kind !== 'combine')) return null;
    const t = shifted.get(r.turn_id) ?? r.reward;
    return t < 0 ? t * this.o.negativeWeight : t;
  }

  /** Advantages under the tail guard (learn/tail-guard.ts), given the answer's sampling log-probs; counts what it left out. */
  private tailGuarded(advantages: number[], behaviour: readonly number[]): number[] {
    if (this.o.tailGuard <= 0) return advantages;
    const g = guardTail(advantages, behaviour, Math.log(this.o.tailGuard));
    this.counts.tailTokens += g.zeroed;
    return g.advantages;
  }

  /** Hindsight data (trainer/hindsight.ts) for the approved samples of a batch that followed corrections. */
  private async hindsightFor(rows: PendingRow[], shifted: Map<number, number>): Promise<Datum[]> {
    const out: Datum[] = [];
    for (const r of rows) {
      if (r.reward === null || r.reward <= 0 || (r.kind !== 'binary' && r.kind !== 'combine')) continue;
      const turn = this.store.turn(r.turn_id);
      if (!turn) continue;
      const earlier = (this.store.sql(`SELECT t.prompt_ids AS prompt_ids, j.score AS score FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id AND j.status = 'done'
        WHERE t.session_id = ? AND t.turn_type = 'main' AND t.idx < ? ORDER BY t.idx DESC LIMIT 4`).all(turn.session_id, turn.idx) as { prompt_ids: string; score: number | null }[])
        .map((e): EarlierTurn => ({ score: e.score, promptIds: this.store.decodeIds(e.prompt_ids) }));
      const prompts = hindsightPrompts(earlier);
      if (!prompts.length) continue;
      const responseIds = this.store.decodeIds(r.response_ids);
      const a = this.o.weights.rl * (this.rewardTerm(r, shifted) ?? r.reward);
      // the same approved answer on the corrected request: its tail tokens (as it was sampled) are left out there too
      const advantages = this.tailGuarded(new Array(responseIds.length).fill(a), JSON.parse(r.response_logprobs) as number[]);
      const sample: Datum = { promptIds: [], responseIds, advantages, lossMask: new Array(responseIds.length).fill(1), temperature: r.temperature };
      out.push(...await hindsightData(sample, prompts, async (promptIds, ids, temperature) => Array.from((await this.engine.score([{ promptIds, responseIds: ids }], { temperature, adapter: 'current' }))[0]), this.engine.info.contextLength));
    }
    return out;
  }

  /**
   * Samples drawn by an older version are trained against the current weights with truncated
   * importance weights (learn/staleness.ts): their tokens are scored under the weights being
   * trained, at the temperature they were sampled at. Fresh samples are left as they are.
   */
  private async correctStale(data: Datum[], staleness: number[]): Promise<{ data: Datum[]; weightMean: number; truncatedShare: number; distillWeightMean: number | null }> {
    let weightSum = 0, tokens = 0, truncated = 0, distillWeightSum = 0, distillPositions = 0;
    const out = [...data];
    const staleIdx = data.map((_, i) => i).filter((i) => staleness[i] > 0);
    for (const temperature of new Set(staleIdx.map((i) => data[i].temperature ?? 1))) {
      const group = staleIdx.filter((i) => (data[i].temperature ?? 1) === temperature);
      const proximal = await this.engine.score(group.map((i) => ({ promptIds: data[i].promptIds, responseIds: data[i].responseIds })), { temperature, adapter: 'current' });
      group.forEach((i, k) => {
        const c = correctStaleness({ advantages: data[i].advantages ?? [], behaviour: data[i].behaviourLogprobs ?? [], proximal: Array.from(proximal[k]) }, this.o.importanceCap);
        out[i] = { ...data[i], advantages: c.advantages, behaviourLogprobs: c.oldLogprobs };
        const set = data[i].distill;
        if (set && this.o.staleDistill === 'prefix') {
          const rho = prefixWeights(data[i].behaviourLogprobs ?? [], Array.from(proximal[k]));
          out[i].distill = { ...set, advantages: set.advantages.map((row, t) => row.map((a) => a * rho[t])) };
          distillWeightSum += rho.reduce((a, b) => a + b, 0);
          distillPositions += rho.length;
        }
        weightSum += c.weights.reduce((a, b) => a + b, 0);
        truncated += c.truncated;
      });
    }
    // fresh samples weigh 1 per token
    for (let i = 0; i < data.length; i++) {
      const n = data[i].responseIds.length;
      tokens += n;
      if (staleness[i] === 0) weightSum += n;
    }
    return { data: out, weightMean: tokens ? weightSum / tokens : 1, truncatedShare: tokens ? truncated / tokens : 0, distillWeightMean: distillPositions ? distillWeightSum / distillPositions : null };
  }

  private countStaleness(staleness: number[]): void {
    cumulativeBuckets(staleness, STALENESS_BUCKETS).forEach((n, i) => { this.stalenessBuckets[i] += n; });
    this.stalenessSum += staleness.reduce((a, b) => a + b, 0);
  }

  /**
   * The new weights failed the canary: they are never published. Training goes back to the last
   * checkpoint (samples of later steps are queued again), the batch is set aside with the reason,
   * and the published version keeps serving.
   */
  private async rollBack(record: StepRecord, ids: number[], step: number, reason: string, t0: number): Promise<void> {
    const why = `weights guard: ${reason}; not published, rolled back`;
    record.durationMs = performance.now() - t0;
    this.store.transaction(() => {
      const mark = this.store.sql(`UPDATE samples SET status = 'rejected', reason = ? WHERE turn_id = ?`);
      for (const id of ids) mark.run(why, id);
      this.insertStep({ ...record, step }, why);
    });
    this.counts.rejected += ids.length;
    this.counts.rolledBack++;
    this.lastStep = record;
    const loaded = await this.loadCheckpoint();
    if (!loaded) await this.engine.configureTraining(this.o.lora);
    this.step = loaded?.step ?? 0;
    this.requeueAfter(this.step, 'rolled back by the weights guard');
    this.o.log(`trainer: step ${step} REJECTED by the weights guard (${reason}); ${ids.length} samples set aside; back to step ${this.step}, still serving version ${this.version}`);
  }

  /** The onStep hook; its failure is logged, never a failed step. */
  private async afterStep(record: StepRecord): Promise<void> {
    try { await this.o.onStep?.(record); } catch (e) { this.o.log(`trainer: after step ${record.step}: ${(e as Error).message}`); }
  }

  /** Run f between steps (never during one): rollbacks and other changes of the trained weights. */
  exclusive<T>(f: () => Promise<T>): Promise<T> {
    const run = this.lock.then(f, f);
    this.lock = run.catch(() => undefined);
    return run;
  }

  private insertStep(r: StepRecord, reason: string | null): void {
    this.store.sql(`INSERT INTO training_steps (step, status, version, samples, tokens, loss, reward_mean, clip_fraction, mean_ratio, kl, teacher_gap, grad_norm, staleness_mean, duration_ms, reason, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(r.step, r.status, r.version, r.samples, r.tokens, r.loss, r.rewardMean, r.clipFraction, r.importanceWeightMean ?? null, r.kl, r.teacherGap, r.gradNorm, r.stalenessMean, r.durationMs, reason, Date.now());
  }

  /** Prometheus lines for the last step. */
  metrics(): string {
    const r = this.lastStep;
    // *_total series only go up (counters, since the start of this process); the others are gauges
    const g = (name: string, help: string, v: number | null | undefined) => `# HELP openclaw_rl_train_${name} ${help}\n# TYPE openclaw_rl_train_${name} ${name.endsWith('_total') ? 'counter' : 'gauge'}\nopenclaw_rl_train_${name} ${v ?? 'NaN'}\n`;
    return g('step', 'Optimizer steps taken.', this.step) + g('samples_trained_total', 'Samples trained on.', this.counts.trained) +
      g('samples_stale_total', 'Samples dropped as too stale.', this.counts.stale) + g('samples_rejected_total', 'Samples set aside by rejected steps.', this.counts.rejected) +
      g('rollbacks_total', 'Steps the weights guard refused to publish (training rolled back).', this.counts.rolledBack) +
      g('failures_total', 'Trainer runs that failed with an error (logged at error level).', this.periodic.totalFailures) +
      g('loss', 'Loss of the last step.', r?.loss) + g('reward_mean', 'Mean reward of the last batch.', r?.rewardMean) + g('clip_fraction', 'Share of clipped tokens in the last step.', r?.clipFraction) +
      g('kl_to_base', 'Mean k3 KL to the base model in the last step (when β > 0).', r?.kl) + g('teacher_behaviour_gap', 'Mean |teacher − behaviour| log-prob in the last step.', r?.teacherGap) +
      g('tokens', 'Loss tokens in the last step.', r?.tokens) + g('staleness_mean', 'Mean versions between sampling and training in the last step.', r?.stalenessMean) +
      g('step_duration_seconds', 'Duration of the last step.', r ? r.durationMs / 1000 : null) +
      g('samples_skipped_total', 'Samples set aside by no-op steps (no gradient signal in the batch; nothing published).', this.counts.skipped) +
      g('looping_answers_total', 'Judged answers the loop guard kept from being reinforced or distilled (they repeated themselves).', this.counts.looping) +
      g('repeated_answers_total', 'Approved answers the repeat guard kept from their reward (a word-for-word repeat of a recent answer).', this.counts.repeats) +
      g('unlikely_answers_total', 'Judged answers the likelihood guard kept from being reinforced or distilled (below the base\'s likelihood floor).', this.counts.unlikely) +
      g('noop_steps_total', 'Batches without gradient signal: no optimizer step taken, no version published.', this.noOpSteps) +
      g('staleness_max', 'Versions between sampling and training of the stalest sample in the last step.', r?.stalenessMax) +
      g('importance_weight_mean', 'Mean truncated importance weight (current/behaviour) per token in the last step; 1 = on-policy.', r?.importanceWeightMean) +
      g('importance_truncated_fraction', 'Share of tokens whose importance weight hit the cap in the last step.', r?.importanceTruncated) +
      this.stalenessHistogram();
  }

  /** Prometheus histogram of the staleness (versions behind) of every trained sample since the start. */
  private stalenessHistogram(): string {
    const name = 'openclaw_rl_train_staleness_versions';
    const les = [...STALENESS_BUCKETS.map(String), '+Inf'];
    return `# HELP ${name} Versions between sampling and training, per trained sample.\n# TYPE ${name} histogram\n` +
      les.map((le, i) => `${name}_bucket{le="${le}"} ${this.stalenessBuckets[i]}\n`).join('') +
      `${name}_sum ${this.stalenessSum}\n${name}_count ${this.stalenessBuckets.at(-1)}\n`;
  }

  /** Trained samples per staleness bucket since the start (not cumulative), for status. */
  stalenessDistribution(): Record<string, number> {
    const les = [...STALENESS_BUCKETS.map(String), '+Inf'];
    return Object.fromEntries(les.map((le, i) => [i === 0 ? '0' : `≤${le}`, this.stalenessBuckets[i] - (i ? this.stalenessBuckets[i - 1] : 0)]));
  }

  status(): Record<string, unknown> {
    const samples = Object.fromEntries((this.store.sql(`SELECT status, COUNT(*) AS n FROM samples GROUP BY status`).all() as { status: string; n: number }[]).map((r) => [r.status, r.n]));
    return {
      method: this.o.method, policyVersion: this.version, step: this.step, batchSize: this.o.batchSize, samples, lastStep: this.lastStep,
      rollbacks: this.counts.rolledBack, failures: this.periodic.totalFailures, noOpSteps: this.noOpSteps, loopingAnswers: this.counts.looping, unlikelyAnswers: this.counts.unlikely, repeatedAnswers: this.counts.repeats, tailTokens: this.counts.tailTokens, likelihoodFloor: this.likelihoodFloor.floor, staleness: this.stalenessDistribution(),
      ...(this.o.klBudget !== null ? { klCoef: this.klCoef, klBudget: this.o.klBudget } : {}),
      ...(this.baseCanaryMean !== null ? { canaryBudget: this.o.canaryBudget, canaryFall: this.canaryFall(), klFactor: this.canaryFactor() } : {}),
    };
  }
}

