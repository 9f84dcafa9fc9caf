// The agent rollout loop on the real stories260K engine: episodes recorded token-exactly, groups
// normalised into the trainer's queue, versions published while rollouts go on, and failed
// episodes never trained on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { Store } from '../../src/store/store.ts';
import { LocalPool } from '../../src/env/pool.ts';
import { toolCallFactory, ToolCallEnv } from '../../src/env/toolcall.ts';
import { makeTasks } from '../../src/env/arithmetic.ts';
import { runEpisode } from '../../src/agent/episode.ts';
import { headMessages } from '../../src/agent/protocol.ts';
import { agentTrain } from '../../src/agent/train.ts';
import { agentEval } from '../../src/agent/eval.ts';
import { klToBase, chatPrompts, storyFluency, STORY_PROMPTS } from '../../src/agent/drift.ts';
import type { EnvFactory, Environment } from '../../src/env/types.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

/**
 * A test environment for a story model (which cannot do arithmetic): the task is a story opening,
 * success is a continuation that mentions "she" — frequent enough that groups have reward variance.
 * Tasks whose key starts with "crash" break the environment at evaluation time; those whose key starts
 * with "always" succeed whatever the answer (groups without reward variance).
 */
function storyFactory(): EnvFactory {
  return {
    name: 'story-test',
    create: (): Environment => {
      let key = '';
      return {
        reset: async (task) => { key = task.key; return { system: '', user: String(task.opening), tools: [], maxToolCalls: 4 }; },
        execTool: async () => ({ content: 'no tools here', error: true, done: false }),
        evaluate: async (req) => {
          if (key.startsWith('crash')) throw new Error('the environment crashed');
          const ok = key.startsWith('always') || /\bshe\b/i.test(req.finalMessage);
          return { score: ok ? 1 : -1, success: ok };
        },
        close: async () => {},
      };
    },
  };
}

test('an episode records each policy turn with its exact prompt ids, sampled ids and their log-probs', async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  const t = tempDir('ocrl-agent-');
  const store = new Store(t.dir);
  const pool = new LocalPool(toolCallFactory({ python: false }), { capacity: 2 });
  try {
    const task = makeTasks('heldout', 1)[0];
    const ep = await runEpisode(engine, store, pool, task as never, { maxTokensPerTurn: 24, temperature: 1, topP: 1, sessionId: 'ep-1', source: 'agent', allocateTimeoutMs: 5000, seed: 7 });
    assert.equal(ep.status, 'done');
    assert.equal(ep.evaluation!.success, false);
    const rows = store.turns('ep-1');
    assert.equal(rows.length, ep.turns.length);
    const row = rows[0];
    const reset = await new ToolCallEnv({ python: false }).reset(task as never);
    assert.deepEqual(JSON.parse(row.prompt_ids), engine.tokenizer.encodeChat(headMessages(reset.system, task.question), { tools: reset.tools }));
    assert.deepEqual(JSON.parse(row.response_ids), ep.turns[0].responseIds);
    // the recorded log-probs are those of the sampling distribution: scoring the same ids agrees
    const [scored] = await engine.score([{ promptIds: JSON.parse(row.prompt_ids), responseIds: JSON.parse(row.response_ids) }]);
    const recorded = JSON.parse(row.response_logprobs) as number[];
    recorded.forEach((lp, i) => assert.ok(Math.abs(lp - scored[i]) < 1e-3, `token ${i}: ${lp} vs ${scored[i]}`));
    assert.equal(row.next_state_status, 'none', 'agent turns are not waiting for a user reply');
  } finally { await pool.shutdown(); await engine.close(); store.close(); t.cleanup(); }
});

test('agent train: groups become samples with group-normalised advantages, the trainer publishes while rollouts go on, failed episodes are never trained', { timeout: 300_000 }, async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  const t = tempDir('ocrl-agent-train-');
  const store = new Store(t.dir);
  const pool = new LocalPool(storyFactory(), { capacity: 4 });
  const openings = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Lily and Tom'];
  const tasks = [...openings.map((o, i) => ({ key: `story-${i}`, opening: o })), { key: 'crash-0', opening: 'One sunny day' }];
  const lines: string[] = [];
  try {
    const summary = await agentTrain(engine, store, pool, tasks, {
      workers: 4, groupSize: 4, episodes: 40, maxTokensPerTurn: 24, temperature: 1, topP: 1, prm: null,
      trainer: { checkpointDir: `${t.dir}/checkpoints`, batchSize: 4, learningRate: 1e-3, maxStaleness: 4, pollMs: 50 },
      maxQueuedSamples: 16, allocateTimeoutMs: 30_000, runId: 'run', seed: 3, log: (l) => lines.push(l),
    });
    assert.equal(summary.episodes, 40);
    assert.equal(summary.failed, 8, 'the two groups of the crashing task failed');
    const samples = store.sql(`SELECT s.status, s.reason, s.advantages, s.reward, t.session_id FROM samples s JOIN turns t ON t.id = s.turn_id`).all() as { status: string; reason: string | null; advantages: string; reward: number | null; session_id: string }[];
    const failed = samples.filter((s) => s.reason?.startsWith('episode failed'));
    assert.equal(failed.length, 8);
    assert.ok(failed.every((s) => s.status === 'none' && s.reward === null), 'failed episodes are never queued');
    const trainable = samples.filter((s) => s.status === 'pending' || s.status === 'trained' || s.status === 'stale');
    assert.ok(trainable.length >= 8, `${trainable.length} samples had reward variance`);
    // within a group the advantages sum to ~0 (GRPO), each constant over its tokens
    const byGroup = new Map<string, number[]>();
    for (const s of trainable) {
      const a = JSON.parse(s.advantages) as number[];
      assert.ok(a.every((x) => x === a[0]));
      const g = s.session_id.replace(/-e\d+$/, '');
      byGroup.set(g, [...(byGroup.get(g) ?? []), a[0]]);
    }
    for (const [g, a] of byGroup) assert.ok(Math.abs(a.reduce((x, y) => x + y, 0)) < 1e-6, `${g}: ${a}`);
    assert.ok(summary.steps >= 1 && summary.policyVersion >= 1, `published ${summary.policyVersion} (steps ${summary.steps})`);
    assert.equal(store.sql(`SELECT COUNT(*) AS n FROM samples WHERE status = 'trained'`).get()!.n, summary.steps * 4);
    // rollouts went on while the trainer published: later episodes were sampled by newer versions
    const versions = store.turns().map((r) => r.policy_version);
    assert.ok(Math.max(...versions) >= 1, 'some episodes ran on a published version');
    assert.ok(summary.curve.length === 10);
  } finally { await pool.shutdown(); await engine.close(); store.close(); t.cleanup(); }
});

test('agent eval reports accuracy and pass@k over the held-out tasks', async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  const pool = new LocalPool(storyFactory(), { capacity: 4 });
  try {
    const tasks = ['Once upon a time', 'There was a girl'].map((o, i) => ({ key: `h-${i}`, opening: o }));
    const r = await agentEval(engine, null, pool, tasks, { workers: 4, samples: 6, ks: [1, 4], maxTokensPerTurn: 24, temperature: 1, topP: 1, seed: 1, runId: 'e', allocateTimeoutMs: 10_000 });
    assert.equal(r.episodes, 12);
    assert.equal(r.failed, 0);
    assert.ok(r.accuracy >= 0 && r.accuracy <= 1);
    assert.ok(Math.abs(r.passAtK['pass@1'] - r.accuracy) < 1e-9, 'pass@1 equals accuracy with equal samples per task');
    assert.ok(r.passAtK['pass@4'] >= r.passAtK['pass@1']);
    assert.ok(r.tokensPerSecond > 0);
  } finally { await pool.shutdown(); await engine.close(); }
});

test('KL(policy ‖ base) is zero before training and positive once a trained version is published', async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  try {
    const prompts = chatPrompts(engine.tokenizer, STORY_PROMPTS.slice(0, 2));
    assert.ok(Math.abs(await klToBase(engine, prompts, { samples: 2, maxTokens: 12, seed: 1 })) < 1e-6);
    await engine.configureTraining({ rank: 8, alpha: 16 });
    const data = prompts.map((p) => ({ promptIds: p, responseIds: engine.tokenizer.encode(' the dog ran', false) }));
    for (let i = 0; i < 5; i++) { await engine.forwardBackward(data, { kind: 'cross_entropy' }); await engine.optimStep({ learningRate: 1e-2 }); }
    await engine.publish(await engine.saveWeights());
    const kl = await klToBase(engine, prompts, { samples: 2, maxTokens: 12, seed: 1 });
    assert.ok(kl > 0.001, `KL ${kl}`);
  } finally { await engine.close(); }
});

test('agent train --max-minutes: no new episode after the budget, the trainer stops after its step in progress', { timeout: 120_000 }, async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  const t = tempDir('ocrl-agent-budget-');
  const store = new Store(t.dir);
  const pool = new LocalPool(storyFactory(), { capacity: 4 });
  try {
    const tasks = ['Once upon a time', 'One day, a little girl'].map((o, i) => ({ key: `story-${i}`, opening: o }));
    const summary = await agentTrain(engine, store, pool, tasks, {
      workers: 4, groupSize: 4, episodes: 100_000, maxTokensPerTurn: 16, temperature: 1, topP: 1, prm: null, maxMs: 3000,
      trainer: { checkpointDir: `${t.dir}/checkpoints`, batchSize: 4, learningRate: 1e-3, pollMs: 50 },
      maxQueuedSamples: 16, allocateTimeoutMs: 30_000, runId: 'run', seed: 3, log: () => {},
    });
    assert.equal(summary.stoppedBy, 'time');
    assert.ok(summary.episodes > 0 && summary.episodes < 100_000 && summary.episodes % 4 === 0, `${summary.episodes} episodes, in whole groups`);
    // the episodes in flight and one step may run past the budget, never a new group
    assert.ok(summary.elapsedMs >= 3000 && summary.elapsedMs < 3000 + 20_000, `${summary.elapsedMs} ms`);
    assert.ok(summary.cpuSeconds > 0);
  } finally { await pool.shutdown(); await engine.close(); store.close(); t.cleanup(); }
});

test('story fluency: before training the policy is the base (same rate), and the base is mostly fluent on its own band', async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  try {
    const prompts = chatPrompts(engine.tokenizer, STORY_PROMPTS.slice(0, 2));
    await engine.configureTraining({ rank: 8, alpha: 16 });
    const f = await storyFluency(engine, prompts, { samples: 4, maxTokens: 16, seed: 1 });
    assert.equal(f.samples, 8);
    assert.equal(f.policy, f.base);
    assert.equal(f.policyMeanLL, f.baseMeanLL);
    assert.ok(f.base >= 0.5, `base fluent ${f.base}`);
    assert.equal(f.examples.length, 2);
  } finally { await engine.close(); }
});

test('agent train --anchors: base answers are queued after each group that trains, none after a group without reward variance', { timeout: 300_000 }, async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  const t = tempDir('ocrl-agent-anchors-');
  const store = new Store(t.dir);
  const pool = new LocalPool(storyFactory(), { capacity: 4 });
  try {
    const tasks = [{ key: 'story-0', opening: 'Once upon a time' }, { key: 'always-0', opening: 'One day, a little girl' }, { key: 'story-1', opening: 'Lily and Tom' }];
    const summary = await agentTrain(engine, store, pool, tasks, {
      workers: 4, groupSize: 4, episodes: 24, maxTokensPerTurn: 24, temperature: 1, topP: 1, prm: null,
      anchors: { perGroup: 2, advantage: 1, maxTokens: 16 },
      trainer: { checkpointDir: `${t.dir}/checkpoints`, batchSize: 4, learningRate: 1e-3, pollMs: 50 },
      maxQueuedSamples: 16, allocateTimeoutMs: 30_000, runId: 'run', seed: 3, log: () => {},
    });
    assert.equal(summary.groups, 6);
    const rows = store.sql(`SELECT s.status, t.session_id FROM samples s JOIN turns t ON t.id = s.turn_id`).all() as { status: string; session_id: string }[];
    const groupOf = (sid: string) => sid.match(/-g(\d+)-/)![1];
    const trained = new Set(rows.filter((r) => !r.session_id.includes('-anchor') && r.status !== 'none').map((r) => groupOf(r.session_id)));
    const anchored = rows.filter((r) => r.session_id.includes('-anchor'));
    assert.ok(trained.size >= 1, 'some story group had reward variance');
    assert.ok(!trained.has('1') && !trained.has('4'), 'the always-succeeding task never trains');
    assert.equal(anchored.length, 2 * trained.size, `${anchored.length} anchors for ${trained.size} groups that train`);
    assert.ok(anchored.every((r) => trained.has(groupOf(r.session_id)) && r.status !== 'none'));
    assert.equal(summary.skippedGroups, 6 - trained.size);
  } finally { await pool.shutdown(); await engine.close(); store.close(); t.cleanup(); }
});
