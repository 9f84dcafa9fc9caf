// `agent train`: N episodes at once against the live policy, G episodes per task (a group); when a
// group is complete its rewards (outcome + λ · mean PRM step score) are group-normalised (GRPO)
// and every policy turn of its episodes becomes a sample in the store's queue, with the episode's
// advantage on each of its sampled tokens. The existing trainer (src/trainer/loop.ts) trains those
// samples and publishes new versions while the rollouts go on; it drops samples more than
// --max-staleness versions behind, and the rollouts wait while the queue holds more than a few
// batches, so sampling never runs far ahead of training.
import { join } from 'node:path';
import type { TrainingEngine } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import { JsonlLog } from '../store/jsonl.ts';
import { TrainerLoop, TRAINER_DEFAULTS, type TrainerOptions } from '../trainer/loop.ts';
import { linearDecay } from './rewards.ts';
import type { EnvPool, Task } from '../env/types.ts';
import type { ChatBackend } from '../judge/backends.ts';
import { runEpisode, type EpisodeResult } from './episode.ts';
import { integratedReward, groupAdvantages } from './rewards.ts';
import { scoreSteps, STEP_JUDGE_DEFAULTS, type StepJudgeOptions } from './prm.ts';
import type { TaskSource } from './curriculum.ts';
import { queueTurnSamples } from './samples.ts';
import { anchorSample, type AnchorOptions } from './anchors.ts';
import type { JudgeTrainer } from './judge-training.ts';

export interface AgentTrainOptions {
  workers: number;
  groupSize: number;
  /** total episodes (rounded up to whole groups) */
  episodes: number;
  maxTokensPerTurn: number;
  temperature: number;
  topP: number;
  /** PRM step scores: a backend and λ (0 = outcome only) */
  prm: { backend: ChatBackend; coef: number; judge: StepJudgeOptions } | null;
  /** judge consistency training (--train-judge): the judge scores the steps and learns from the outcomes; λ = coef */
  judge?: { trainer: JudgeTrainer; coef: number } | null;
  trainer: Partial<TrainerOptions> & { checkpointDir: string };
  /** rollouts wait while more samples than this are queued */
  maxQueuedSamples: number;
  /**
   * a wall-clock budget for training (ms from the start of the rollouts): after it no new episode
   * starts, the episodes in flight finish and the trainer stops after its step in progress (queued
   * samples are left untrained); without it every episode runs and the trainer takes what is queued
   */
  maxMs?: number;
  /**
   * 'linear': the learning rate falls linearly from trainer.learningRate to a tenth of it over the
   * run (the time budget when there is one, else the episodes)
   */
  lrDecay?: 'none' | 'linear';
  /** replay of the base model's chat answers beside the agent samples of each group that trains (anchors.ts); null/absent: none */
  anchors?: AnchorOptions | null;
  allocateTimeoutMs: number;
  runId: string;
  seed: number;
  log: (line: string) => void;
  /** called after each group with the running numbers */
  onProgress?: (p: AgentProgress) => void;
}

export interface AgentProgress {
  episodes: number;
  failed: number;
  groups: number;
  /** success rate over the last `window` finished episodes */
  recentAccuracy: number;
  accuracy: number;
  meanReward: number;
  policyVersion: number;
  steps: number;
  envStepsPerSecond: number;
  tokensPerSecond: number;
  elapsedMs: number;
  /** with a curriculum: the level of the last finished group and the running success rate at it */
  level?: number;
  levelSuccess?: number;
}

export interface AgentTrainSummary extends AgentProgress {
  samples: number;
  skippedGroups: number;
  /** why the run ended: every episode ran, or the --max-minutes budget was spent */
  stoppedBy: 'episodes' | 'time';
  /** CPU seconds of the whole process (every thread) during training */
  cpuSeconds: number;
  /** after each group; with a curriculum also the level played and the running success rate at it */
  curve: { episodes: number; accuracy: number; reward: number; version: number; level?: number; levelSuccess?: number }[];
}

/** Run-wide counters; the pure part of progress reporting. */
class Tally {
  episodes = 0; failed = 0; groups = 0; successes = 0; rewardSum = 0; envSteps = 0; tokens = 0;
  readonly recent: boolean[] = [];
  readonly window: number;
  constructor(window = 32) { this.window = window; }
  add(ep: EpisodeResult, reward: number | null): void {
    this.episodes++;
    this.envSteps += ep.envSteps;
    this.tokens += ep.sampledTokens;
    if (ep.status === 'failed') { this.failed++; return; }
    const ok = ep.evaluation!.success;
    if (ok) this.successes++;
    this.rewardSum += reward ?? 0;
    this.recent.push(ok);
    if (this.recent.length > this.window) this.recent.shift();
  }
}

/** A counting gate for the N rollout workers. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) { this.free = n; }
  async take(): Promise<void> { if (this.free > 0) { this.free--; return; } await new Promise<void>((r) => this.waiting.push(r)); }
  give(): void { const w = this.waiting.shift(); if (w) w(); else this.free++; }
}

export async function agentTrain(engine: TrainingEngine, store: Store, pool: EnvPool, tasks: Task[] | TaskSource, o: AgentTrainOptions): Promise<AgentTrainSummary> {
  if (Array.isArray(tasks) && tasks.length === 0) throw new Error('no tasks to train on');
  const source: TaskSource = Array.isArray(tasks) ? { next: (g) => tasks[g % tasks.length] } : tasks;
  // an episode's turns are trained as one datum where they share a batch: one pass over the shared context
  let t0 = performance.now(), started = 0;
  const lr0 = o.trainer.learningRate ?? TRAINER_DEFAULTS.learningRate;
  const progressShare = () => Math.min(1, o.maxMs !== undefined ? (performance.now() - t0) / o.maxMs : started / Math.max(1, o.episodes));
  const learningRateAt = o.lrDecay === 'linear' ? () => lr0 * linearDecay(progressShare(), 0.1) : undefined;
  const trainer = new TrainerLoop(store, engine, { mergeTurns: true, ...o.trainer, learningRateAt, method: 'binary', rewardBaseline: 'none', log: o.log });
  await trainer.init();
  trainer.start();
  const episodesLog = new JsonlLog(join(store.dir, 'episodes.jsonl'));
  const tally = new Tally();
  const slots = new Slots(o.workers);
  t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const deadline = o.maxMs === undefined ? Infinity : t0 + o.maxMs;
  const curve: AgentTrainSummary['curve'] = [];
  let samples = 0, skippedGroups = 0;
  const progress = (): AgentProgress => {
    const s = (performance.now() - t0) / 1000;
    const done = tally.episodes - tally.failed;
    return {
      episodes: tally.episodes, failed: tally.failed, groups: tally.groups,
      recentAccuracy: tally.recent.length ? tally.recent.filter(Boolean).length / tally.recent.length : 0,
      accuracy: done ? tally.successes / done : 0, meanReward: done ? tally.rewardSum / done : 0,
      policyVersion: trainer.version, steps: trainer.step, envStepsPerSecond: tally.envSteps / s, tokensPerSecond: tally.tokens / s, elapsedMs: s * 1000,
    };
  };

  /** Rewards, advantages and samples for a finished group. */
  const finishGroup = async (g: number, task: Task, eps: EpisodeResult[]) => {
    const ok = eps.filter((e) => e.status === 'done');
    // step scores: from the judge being trained (it learns from these episodes' outcomes), or a fixed PRM
    const stepScores = o.judge ? await Promise.all(ok.map((e) => o.judge!.trainer.scoreAndLearn(e)))
      : o.prm ? await Promise.all(ok.map((e) => scoreSteps(o.prm!.backend, e, o.prm!.judge))) : ok.map(() => []);
    const rewards = ok.map((e, i) => integratedReward(e.evaluation!.score, stepScores[i], o.judge?.coef ?? o.prm?.coef ?? 0));
    const adv = groupAdvantages(rewards);
    if (!adv) skippedGroups++;
    const temperature = o.temperature > 0 ? o.temperature : 1;
    samples += queueTurnSamples(store, eps.flatMap((e) => {
      const i = ok.indexOf(e);
      const reason = e.status === 'failed' ? `episode failed: ${e.error}` : !adv ? 'group without reward variance' : null;
      return e.turns.map((t) => ({
        turnId: t.turnId, responseLength: t.responseIds.length, reward: i >= 0 ? rewards[i] : null, advantage: adv && i >= 0 ? adv[i] : null,
        version: t.policyVersion, temperature, reason,
      }));
    }));
    eps.forEach((e) => {
      const i = ok.indexOf(e);
      tally.add(e, i >= 0 ? rewards[i] : null);
      episodesLog.append({
        event: 'episode', run: o.runId, group: g, task: task.key, difficulty: task.difficulty ?? null, status: e.status, error: e.error ?? null, ended: e.ended,
        outcome: e.evaluation?.score ?? null, success: e.evaluation?.success ?? null, stepScores: i >= 0 ? stepScores[i] : [], reward: i >= 0 ? rewards[i] : null,
        advantage: adv && i >= 0 ? adv[i] : null, toolCalls: e.toolCalls, turns: e.turns.map((t) => t.turnId), versions: e.turns.map((t) => t.policyVersion),
        tokens: e.sampledTokens, durationMs: Math.round(e.durationMs),
      });
    });
    // anchors balance what a group trains: a group without reward variance trains nothing, so it gets none
    if (o.anchors && adv) {
      const anchors = await Promise.all(Array.from({ length: o.anchors.perGroup }, (_, k) => anchorSample(engine, store, g * o.anchors!.perGroup + k, {
        ...o.anchors!, sessionId: `${o.runId}-g${g}-anchor${k}`, seed: o.seed * 1_000_003 + g * 101 + 50 + k, version: trainer.version,
      })));
      samples += queueTurnSamples(store, anchors.filter((a) => a !== null));
    }
    tally.groups++;
    const extra = source.onGroup?.(task, ok.map((e) => e.evaluation!.success));
    if (extra) episodesLog.append({ event: 'group', run: o.runId, group: g, task: task.key, ...extra });
    const p = progress();
    const step = extra?.curriculum as { level: number; success: number } | undefined;
    curve.push({ episodes: p.episodes, accuracy: p.recentAccuracy, reward: p.meanReward, version: p.policyVersion, ...(step ? { level: step.level, levelSuccess: step.success } : {}) });
    o.onProgress?.({ ...p, ...(step ? { level: step.level, levelSuccess: step.success } : {}) });
  };

  const groups = Math.ceil(o.episodes / o.groupSize);
  const pending: Promise<void>[] = [];
  let stoppedBy: AgentTrainSummary['stoppedBy'] = 'episodes';
  for (let g = 0; g < groups; g++) {
    if (performance.now() >= deadline) { stoppedBy = 'time'; break; }
    const task = source.next(g);
    const episodes: Promise<EpisodeResult>[] = [];
    for (let k = 0; k < o.groupSize; k++) {
      // backpressure: do not sample far ahead of what the trainer can take (past the deadline a
      // started group is completed without waiting: its samples will not be trained)
      while (trainer.pendingCount() > o.maxQueuedSamples && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await slots.take();
      started++;
      episodes.push(runEpisode(engine, store, pool, task, {
        maxTokensPerTurn: o.maxTokensPerTurn, temperature: o.temperature, topP: o.topP, sessionId: `${o.runId}-g${g}-e${k}`, source: 'agent',
        allocateTimeoutMs: o.allocateTimeoutMs, seed: o.seed === undefined ? undefined : o.seed * 1_000_003 + g * 101 + k,
      }).finally(() => slots.give()));
    }
    pending.push(Promise.all(episodes).then((eps) => finishGroup(g, task, eps)));
  }
  await Promise.all(pending);
  // without a time budget, let the trainer take what is left in whole batches; then stop it (it
  // finishes the step in progress and checkpoints)
  const drainUntil = Math.min(deadline, performance.now() + 300_000);
  while (trainer.pendingCount() >= trainer.o.batchSize && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 200));
  if (performance.now() >= deadline) stoppedBy = 'time';
  await trainer.stop();
  const cpu = process.cpuUsage(cpu0);
  return { ...progress(), samples, skippedGroups, curve, stoppedBy, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}
