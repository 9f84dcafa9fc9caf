// The learning loop: judged turns become samples (a durable queue in the store), samples become
// PPO steps on the LoRA adapter, steps become published weights versions — while the server keeps
// answering (training runs on the engine thread one micro-batch at a time, between decode steps).
//
// Crash safety: a step marks its samples trained and records itself in one transaction after the
// new version is published; a checkpoint (adapter + optimizer) follows every `checkpointEvery` steps.
// At start the latest checkpoint is loaded, and samples trained by steps after it — whose effect died
// with the process — go back to pending, so nothing acknowledged is lost or trained twice.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store, TurnRow } from '../store/store.ts';
import type { TrainingEngine, Datum, LoraSettings } from '../engine/types.ts';
import type { ChatMessage } from '../engine/types.ts';
import { buildSample, atLeastOneSample, overlongPenalty, groupNormalise, type Method } from '../learn/advantages.ts';
import { contentText, type WireMessage } from '../conversation/messages.ts';
import { Periodic } from '../util/periodic.ts';

export interface TrainerOptions {
  method: Method;
  batchSize: number;
  /** drop samples whose behaviour version is more than this many versions behind */
  maxStaleness: number;
  learningRate: number;
  clipLow: number;
  clipHigh: number;
  klCoef: number;
  gradClipNorm: number;
  opdTeacher: 'base' | 'policy';
  weights: { opd: number; rl: number };
  overlong: { lMax: number; lCache: number } | null;
  /**
   * 'batch' subtracts the batch's mean reward from each sample's reward term (a baseline, as group
   * normalisation does for groups of answers to one prompt): when most answers fail, a rare success
   * gets a strong push and routine failures a mild one. 'group' normalises rewards within each group
   * of samples in the batch that share one prompt, (r − mean)/std (GRPO-style; singletons keep r).
   * 'none' uses A = r as specified.
   */
  rewardBaseline: 'none' | 'batch' | 'group';
  /** the LoRA adapter to train, or null to train every weight (full-parameter) */
  lora: LoraSettings | null;
  checkpointEvery: number;
  checkpointDir: string;
  pollMs: number;
  log: (line: string) => void;
  /** called after every step (published or rejected): metrics.jsonl, version archive, evaluation */
  onStep?: (record: StepRecord) => void | Promise<void>;
}

export const TRAINER_DEFAULTS: Omit<TrainerOptions, 'checkpointDir'> = {
  method: 'combine', batchSize: 8, maxStaleness: 4, learningRate: 1e-3, clipLow: 0.2, clipHigh: 0.28, klCoef: 0, gradClipNorm: 1,
  opdTeacher: 'base', weights: { opd: 1, rl: 1 }, overlong: null, rewardBaseline: 'batch', lora: { rank: 16, alpha: 32 }, checkpointEvery: 1, pollMs: 200, log: () => {},
};

export interface StepRecord { step: number | null; status: string; version: number | null; samples: number; tokens: number; loss: number | null; rewardMean: number | null; clipFraction: number | null; kl: number | null; teacherGap: number | null; gradNorm: number | null; stalenessMean: number | null; durationMs: number }

/** The request's messages with the hint appended to the last user message (the OPD teacher prompt). */
export function withHint(messages: WireMessage[], hint: string): ChatMessage[] {
  const out: ChatMessage[] = messages.map((m) => ({ ...(m as object), role: (m.role === 'developer' ? 'system' : m.role) as ChatMessage['role'], content: m.content === null || m.content === undefined ? '' : contentText(m.content) })) as ChatMessage[];
  let i = out.map((m) => m.role).lastIndexOf('user');
  if (i < 0) { out.push({ role: 'user', content: '' }); i = out.length - 1; }
  out[i] = { ...out[i], content: `${contentText(out[i].content)}\n\n[user's hint / instruction]\n${hint}`.trim() };
  return out;
}

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
  counts = { trained: 0, stale: 0, rejected: 0 };
  /** serialises steps with rollbacks (see exclusive) */
  private lock: Promise<unknown> = Promise.resolve();

  constructor(store: Store, engine: TrainingEngine, o: Partial<TrainerOptions> & { checkpointDir: string }) {
    this.store = store;
    this.engine = engine;
    this.o = { ...TRAINER_DEFAULTS, ...o };
    this.periodic = new Periodic(() => this.tick(), this.o.pollMs, (e) => this.o.log(`trainer: ${(e as Error).stack ?? e}`));
  }

  private get checkpoint(): string { return join(this.o.checkpointDir, 'latest'); }

  /** Resume from the latest checkpoint, or start a fresh adapter. */
  async init(): Promise<void> {
    if (existsSync(join(this.checkpoint, 'trainer_state.json'))) {
      const state = JSON.parse(readFileSync(join(this.checkpoint, 'trainer_state.json'), 'utf8')) as { optimizerStep: number };
      this.version = await this.engine.loadTrainingState(this.checkpoint);
      await this.engine.publish(this.version);
      this.step = state.optimizerStep;
      const reset = this.store.sql(`UPDATE samples SET status = 'pending', step = NULL, reason = 'step lost in a restart; trained again' WHERE status = 'trained' AND step > ?`).run(this.step).changes;
      this.store.sql(`UPDATE training_steps SET status = 'lost' WHERE status = 'published' AND step > ?`).run(this.step);
      this.o.log(`trainer: resumed at step ${this.step}, version ${this.version}${Number(reset) ? `; ${reset} sample(s) from lost steps queued again` : ''}`);
    } else {
      await this.engine.configureTraining(this.o.lora);
    }
  }

  start(): void { this.stopping = false; this.periodic.start(); }

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

  private judgedTurns(): (TurnRow & { score: number; hint: string | null })[] {
    return this.store.sql(`SELECT t.*, j.score AS score, j.hint AS hint FROM turns t JOIN judgements j ON j.turn_id = t.id
      LEFT JOIN samples s ON s.turn_id = t.id WHERE j.status = 'done' AND s.turn_id IS NULL ORDER BY t.id`).all() as never;
  }

  async buildSamples(): Promise<number> {
    let built = 0;
    for (const turn of this.judgedTurns()) {
      const request = JSON.parse(turn.request_json) as { messages: WireMessage[]; tools: unknown; params: { temperature: number }; templateKwargs: Record<string, unknown> };
      const responseIds = JSON.parse(turn.response_ids) as number[];
      const behaviour = JSON.parse(turn.response_logprobs) as number[];
      const temperature = request.params.temperature > 0 ? request.params.temperature : 1;
      let reward: number | null = turn.score;
      if (reward !== null && this.o.overlong) reward = Math.max(-1, Math.min(1, reward + overlongPenalty(responseIds.length, this.o.overlong.lMax, this.o.overlong.lCache)));
      let teacher: number[] | null = null;
      if (this.o.method !== 'binary' && turn.hint) {
        const promptIds = this.engine.tokenizer.encodeChat(withHint(request.messages, turn.hint), { tools: (request.tools ?? undefined) as never, templateKwargs: request.templateKwargs });
        if (promptIds.length + responseIds.length - 1 <= this.engine.info.contextLength) {
          [teacher] = (await this.engine.score([{ promptIds, responseIds }], { temperature, adapter: this.o.opdTeacher === 'base' ? 'base' : 'current' })).map((a) => Array.from(a));
        }
      }
      let sample = buildSample(this.o.method, { reward, teacher, behaviour }, this.o.weights);
      let kind: string = sample?.kind ?? 'none';
      if (!sample && this.sessionHasNoSample(turn.session_id)) { sample = atLeastOneSample(responseIds.length); kind = 'neutral'; }
      this.store.sql(`INSERT INTO samples (turn_id, method, kind, reward, hint, advantages, loss_mask, teacher_logprobs, behaviour_version, temperature, status, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(turn.id, this.o.method, kind, reward, turn.hint, JSON.stringify(sample?.advantages ?? []),
        JSON.stringify(sample?.lossMask ?? []), teacher ? JSON.stringify(teacher) : null, Math.max(0, turn.policy_version), temperature, sample ? 'pending' : 'none', Date.now());
      built++;
    }
    return built;
  }

  private sessionHasNoSample(sessionId: string): boolean {
    return !this.store.sql(`SELECT 1 FROM samples s JOIN turns t ON t.id = s.turn_id WHERE t.session_id = ? AND s.status != 'none' LIMIT 1`).get(sessionId);
  }

  private async trainStep(): Promise<void> {
    const t0 = performance.now();
    const rows = this.store.sql(`SELECT s.*, t.prompt_ids, t.response_ids, t.response_logprobs FROM samples s JOIN turns t ON t.id = s.turn_id
      WHERE s.status = 'pending' ORDER BY s.turn_id LIMIT ?`).all(this.o.batchSize) as { turn_id: number; kind: string; reward: number | null; advantages: string; loss_mask: string; teacher_logprobs: string | null; behaviour_version: number; temperature: number; prompt_ids: string; response_ids: string; response_logprobs: string }[];
    const fresh = rows.filter((r) => this.version - r.behaviour_version <= this.o.maxStaleness);
    const stale = rows.filter((r) => this.version - r.behaviour_version > this.o.maxStaleness);
    if (stale.length) {
      const mark = this.store.sql(`UPDATE samples SET status = 'stale', reason = ? WHERE turn_id = ?`);
      for (const r of stale) mark.run(`sampled by version ${r.behaviour_version}, ${this.version - r.behaviour_version} versions behind (limit ${this.o.maxStaleness})`, r.turn_id);
      this.counts.stale += stale.length;
      if (fresh.length < this.o.batchSize) return; // refill the batch on the next round
    }
    const rewarded = fresh.filter((r) => r.reward !== null && (r.kind === 'binary' || r.kind === 'combine'));
    // the reward term each sample gets instead of its raw r (see rewardBaseline)
    const shifted = new Map<number, number>();
    if (this.o.rewardBaseline === 'batch' && rewarded.length > 1) {
      const mean = rewarded.reduce((a, r) => a + r.reward!, 0) / rewarded.length;
      for (const r of rewarded) shifted.set(r.turn_id, r.reward! - mean);
    } else if (this.o.rewardBaseline === 'group') {
      const groups = new Map<string, typeof rewarded>();
      for (const r of rewarded) groups.set(r.prompt_ids, [...(groups.get(r.prompt_ids) ?? []), r]);
      for (const g of groups.values()) if (g.length > 1) groupNormalise(g.map((r) => r.reward!)).forEach((v, i) => shifted.set(g[i].turn_id, v));
    }
    const data: Datum[] = fresh.map((r) => ({
      promptIds: JSON.parse(r.prompt_ids), responseIds: JSON.parse(r.response_ids), behaviourLogprobs: JSON.parse(r.response_logprobs),
      advantages: (JSON.parse(r.advantages) as number[]).map((a) => (shifted.has(r.turn_id) ? a + this.o.weights.rl * (shifted.get(r.turn_id)! - r.reward!) : a)), lossMask: JSON.parse(r.loss_mask), teacherLogprobs: r.teacher_logprobs ? JSON.parse(r.teacher_logprobs) : undefined, temperature: r.temperature,
    }));
    const fb = await this.engine.forwardBackward(data, { kind: 'ppo', clipLow: this.o.clipLow, clipHigh: this.o.clipHigh, klCoef: this.o.klCoef });
    const opt = await this.engine.optimStep({ learningRate: this.o.learningRate, gradClipNorm: this.o.gradClipNorm });
    const rewards = fresh.map((r) => r.reward).filter((x): x is number => x !== null);
    const record: StepRecord = {
      step: null, status: 'rejected', version: null, samples: fresh.length, tokens: fb.tokens, loss: fb.loss, rewardMean: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
      clipFraction: fb.clipFraction, kl: fb.kl, teacherGap: fb.teacherBehaviourGap, gradNorm: opt.gradNorm,
      stalenessMean: fresh.reduce((a, r) => a + (this.version - r.behaviour_version), 0) / Math.max(1, fresh.length), durationMs: 0,
    };
    const ids = fresh.map((r) => r.turn_id);
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
    const version = await this.engine.saveWeights();
    await this.engine.publish(version);
    this.version = version;
    this.step = opt.step;
    record.step = opt.step; record.status = 'published'; record.version = version; record.durationMs = performance.now() - t0;
    this.store.transaction(() => {
      const mark = this.store.sql(`UPDATE samples SET status = 'trained', step = ? WHERE turn_id = ?`);
      for (const id of ids) mark.run(opt.step, id);
      this.insertStep(record, null);
    });
    this.counts.trained += ids.length;
    this.lastStep = record;
    if (this.step % this.o.checkpointEvery === 0) await this.engine.saveTrainingState(this.checkpoint);
    await this.afterStep(record);
    this.o.log(`trainer: step ${opt.step} → version ${version} (${ids.length} samples, ${fb.tokens} tokens, loss ${fb.loss.toFixed(4)}, reward ${record.rewardMean?.toFixed(2) ?? '–'}, clip ${(fb.clipFraction * 100).toFixed(1)}%, ${record.durationMs.toFixed(0)} ms)`);
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
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)`).run(r.step, r.status, r.version, r.samples, r.tokens, r.loss, r.rewardMean, r.clipFraction, r.kl, r.teacherGap, r.gradNorm, r.stalenessMean, r.durationMs, reason, Date.now());
  }

  /** Prometheus lines for the last step. */
  metrics(): string {
    const r = this.lastStep;
    const g = (name: string, help: string, v: number | null | undefined) => `# HELP openclaw_rl_train_${name} ${help}\n# TYPE openclaw_rl_train_${name} gauge\nopenclaw_rl_train_${name} ${v ?? 'NaN'}\n`;
    return g('step', 'Optimizer steps taken.', this.step) + g('samples_trained_total', 'Samples trained on.', this.counts.trained) +
      g('samples_stale_total', 'Samples dropped as too stale.', this.counts.stale) + g('samples_rejected_total', 'Samples set aside by rejected steps.', this.counts.rejected) +
      g('loss', 'Loss of the last step.', r?.loss) + g('reward_mean', 'Mean reward of the last batch.', r?.rewardMean) + g('clip_fraction', 'Share of clipped tokens in the last step.', r?.clipFraction) +
      g('kl_to_base', 'Mean k3 KL to the base model in the last step (when β > 0).', r?.kl) + g('teacher_behaviour_gap', 'Mean |teacher − behaviour| log-prob in the last step.', r?.teacherGap) +
      g('tokens', 'Loss tokens in the last step.', r?.tokens) + g('staleness_mean', 'Mean versions between sampling and training in the last step.', r?.stalenessMean) +
      g('step_duration_seconds', 'Duration of the last step.', r ? r.durationMs / 1000 : null);
  }

  status(): Record<string, unknown> {
    const samples = Object.fromEntries((this.store.sql(`SELECT status, COUNT(*) AS n FROM samples GROUP BY status`).all() as { status: string; n: number }[]).map((r) => [r.status, r.n]));
    return { method: this.o.method, policyVersion: this.version, step: this.step, batchSize: this.o.batchSize, samples, lastStep: this.lastStep };
  }
}
