// Judge consistency training (RLAnything): the step judge (a PRM) is trained online beside the policy.
// The judge is a second engine — its own LoRA adapter, its own store and sample queue, trained by the
// same trainer (src/trainer/loop.ts) — that gives each step of an episode m verdicts. A verdict is
// sampled as the answer inside `\boxed{…}` (the prompt ends with the opening `\boxed{`, so a small
// model answers in the format at once): 1 the step helps, -1 it does not. Once the episode's outcome
// is known, each verdict is rewarded for agreeing with it (+1 / −1; an unreadable verdict counts as
// disagreeing) and, with a smaller weight, for agreeing with the majority of the step's own votes;
// the m votes of a step form a group (GRPO). The step scores (the vote means) also serve as the
// policy's process reward. Agreement is measured on held-out episodes with greedy verdicts, base
// weights (before) against the published judge (after).
import type { TrainingEngine, SampleParams } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import { TrainerLoop, type TrainerOptions } from '../trainer/loop.ts';
import { majority } from '../learn/votes.ts';
import { stepPrompt } from './prm.ts';
import { groupAdvantages } from './rewards.ts';
import { queueTurnSamples } from './samples.ts';
import type { EpisodeResult, EpisodeTurn } from './episode.ts';

export interface JudgeTrainingOptions {
  votes: number;
  temperature: number;
  /** weight of agreeing with the majority of the step's own votes, beside agreeing with the outcome */
  majorityWeight: number;
  /** step texts are cut to this many characters (small judges have small contexts) */
  maxStepChars: number;
  trainer: Partial<TrainerOptions> & { checkpointDir: string };
  log: (line: string) => void;
}

export const JUDGE_TRAINING_DEFAULTS: Omit<JudgeTrainingOptions, 'trainer' | 'log'> = { votes: 4, temperature: 1, majorityWeight: 0.5, maxStepChars: 160 };

export type Verdict = 1 | 0 | -1 | null;

/** The verdict a judge's answer gives: what follows the prompt's `\boxed{` up to `}`. */
export function parseVerdict(text: string): Verdict {
  const m = /^\s*([+-]?\d+)\s*\}?/.exec(text);
  if (!m) return null;
  const v = Number(m[1]);
  return v === 1 || v === 0 || v === -1 ? v : null;
}

/**
 * The reward of one vote: agreement with the outcome (+1 / −1) plus `w` × agreement with the step's
 * majority (+1 / −1, 0 when there is no majority); an unreadable or neutral vote disagrees with both.
 */
export function voteReward(vote: Verdict, success: boolean, stepMajority: number, w: number): number {
  const target = success ? 1 : -1;
  const withOutcome = vote === target ? 1 : -1;
  const withMajority = stepMajority === 0 ? 0 : vote === stepMajority ? 1 : -1;
  return withOutcome + w * withMajority;
}

/** The steps of an episode a judge scores: every turn that got an observation, else the final turn. */
export function judgedSteps(ep: EpisodeResult): EpisodeTurn[] {
  const steps = ep.turns.filter((t) => t.observation !== null);
  return steps.length ? steps : ep.turns.slice(-1);
}

/**
 * Agreement on held-out steps: `rate` over all steps, and `balanced`, the mean of the rates on steps of
 * successful and of failed episodes (a judge that always says −1 scores 100% on a set of failures, 50% here).
 */
export interface Agreement {
  steps: number; agree: number; invalid: number; rate: number; successSteps: number; balanced: number;
  /** per class: steps of successful episodes whose verdict is +1, steps of failed episodes whose verdict is −1 */
  successAgree: number; failureSteps: number; failureAgree: number;
}

export class JudgeTrainer {
  readonly o: JudgeTrainingOptions;
  readonly engine: TrainingEngine;
  readonly store: Store;
  readonly trainer: TrainerLoop;
  /** votes cast, votes readable, votes agreeing with the outcome (over the training episodes) */
  readonly counts = { votes: 0, readable: 0, agree: 0, samples: 0, groupsWithoutSignal: 0 };
  private seq = 0;

  constructor(engine: TrainingEngine, store: Store, o: Partial<JudgeTrainingOptions> & Pick<JudgeTrainingOptions, 'trainer' | 'log'>) {
    this.o = { ...JUDGE_TRAINING_DEFAULTS, ...o };
    this.engine = engine;
    this.store = store;
    this.trainer = new TrainerLoop(store, engine, { ...this.o.trainer, method: 'binary', rewardBaseline: 'none', log: (l) => this.o.log(`[judge] ${l}`) });
  }

  async start(): Promise<void> { await this.trainer.init(); this.trainer.start(); }
  async stop(): Promise<void> { await this.trainer.stop(); }

  /** The judge's prompt ids for a step: the chat prompt, then the opening of the boxed verdict. */
  private promptIds(ep: EpisodeResult, t: EpisodeTurn): number[] {
    const tok = this.engine.tokenizer;
    const cut = (s: string) => (s.length > this.o.maxStepChars ? `${s.slice(0, this.o.maxStepChars)}…` : s);
    const task = String(ep.task.question ?? ep.task.description ?? ep.task.goal ?? ep.task.key);
    const ids = [...tok.encodeChat(stepPrompt(cut(task), cut(t.text), cut(t.observation ?? '(final answer)')) as never, { addGenerationPrompt: true }), ...tok.encode('\\boxed{', false)];
    const room = this.engine.info.contextLength - 4;
    return ids.length > room ? ids.slice(ids.length - room) : ids;
  }

  private params(temperature: number, weights?: SampleParams['weights']): SampleParams {
    return { maxTokens: 3, temperature, topP: 1, topK: 0, stop: ['}'], ...(weights ? { weights } : {}) };
  }

  /**
   * Judge an episode's steps with m votes each, record the votes as the judge's turns, and queue them
   * as judge samples rewarded by agreement with the outcome. Returns the mean vote per step.
   */
  async scoreAndLearn(ep: EpisodeResult): Promise<number[]> {
    if (ep.status !== 'done' || !ep.evaluation) return [];
    const success = ep.evaluation.success;
    const scores: number[] = [];
    for (const step of judgedSteps(ep)) {
      const promptIds = this.promptIds(ep, step);
      const sessionId = `judge-${ep.task.key}-${this.seq++}`;
      const votes = await Promise.all(Array.from({ length: this.o.votes }, async () => {
        const params = this.params(this.o.temperature);
        const turnId = this.store.beginTurn({ sessionId, idSource: 'judge', turnType: 'main', typeSource: 'judge', request: { task: ep.task.key, step: step.turnId, params }, promptIds, policyVersion: -1 });
        const s = await collect(this.engine.sample(promptIds, params));
        const text = this.engine.tokenizer.decode(s.ids, true);
        this.store.finishTurn(turnId, {
          status: 'complete', responseIds: s.ids, responseLogprobs: s.logprobs, responseText: text,
          answer: { content: text, reasoning: null, toolCalls: [] }, finishReason: s.finishReason, policyVersion: s.policyVersion,
        });
        return { turnId, ids: s.ids, version: s.policyVersion, verdict: parseVerdict(text) };
      }));
      this.store.endSession(sessionId, 'done');
      const readable = votes.map((v) => v.verdict).filter((v): v is 1 | 0 | -1 => v !== null);
      const stepMajority = majority(readable);
      const rewards = votes.map((v) => voteReward(v.verdict, success, stepMajority, this.o.majorityWeight));
      const adv = groupAdvantages(rewards);
      if (!adv) this.counts.groupsWithoutSignal++;
      this.counts.votes += votes.length;
      this.counts.readable += readable.length;
      this.counts.agree += votes.filter((v) => v.verdict === (success ? 1 : -1)).length;
      this.counts.samples += queueTurnSamples(this.store, votes.map((v, i) => ({
        turnId: v.turnId, responseLength: v.ids.length, reward: rewards[i], advantage: adv ? adv[i] : null, version: v.version,
        temperature: this.o.temperature, reason: adv ? null : 'votes without reward variance',
      })));
      scores.push(readable.length ? readable.reduce((a, b) => a + b, 0 as number) / readable.length : Number.NaN);
    }
    return scores;
  }

  /**
   * Judge–outcome agreement on held-out episodes: one greedy verdict per step with the given weights
   * ('base' = the judge before training, 'published' = after); a step agrees when its verdict has the
   * sign of the episode's outcome.
   */
  async agreement(episodes: EpisodeResult[], weights: 'base' | 'published'): Promise<Agreement> {
    let steps = 0, agree = 0, invalid = 0;
    const byClass = { success: [0, 0], failure: [0, 0] }; // [steps, agreeing]
    for (const ep of episodes) {
      if (ep.status !== 'done' || !ep.evaluation) continue;
      for (const step of judgedSteps(ep)) {
        const s = await collect(this.engine.sample(this.promptIds(ep, step), this.params(0, weights)));
        const v = parseVerdict(this.engine.tokenizer.decode(s.ids, true));
        const c = byClass[ep.evaluation.success ? 'success' : 'failure'];
        const ok = v === (ep.evaluation.success ? 1 : -1);
        steps++;
        c[0]++;
        if (v === null) invalid++;
        if (ok) { agree++; c[1]++; }
      }
    }
    const rates = [byClass.success, byClass.failure].filter(([n]) => n > 0).map(([n, a]) => a / n);
    return {
      steps, agree, invalid, rate: steps ? agree / steps : 0, successSteps: byClass.success[0], balanced: rates.length ? rates.reduce((a, b) => a + b, 0) / rates.length : 0,
      successAgree: byClass.success[1], failureSteps: byClass.failure[0], failureAgree: byClass.failure[1],
    };
  }
}
