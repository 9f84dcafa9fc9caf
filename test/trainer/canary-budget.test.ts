// The canary budget in the trainer, on stories260K: once the published version's canary has fallen more than the
// budget below the base's, β of the next step's KL term is the recipe's times the budget's factor
// (learn/canary-budget.ts); under the budget, or with it off, β is the recipe's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { dogConversation } from '../helpers/dog-user.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import type { TrainerOptions } from '../../src/trainer/options.ts';
import { canaryKlFactor, CANARY_BUDGET_DEFAULTS } from '../../src/learn/canary-budget.ts';

interface Step { klCoef: number; fall: number; factor: number }

async function train(canaryBudget: number, rewardKlCoef: number | null = null) {
  const s = await startTestServer();
  try {
    const log: string[] = [];
    const options: Partial<TrainerOptions> & { checkpointDir: string } = { method: 'binary', rewardBaseline: 'none', batchSize: 4, learningRate: 2e-2, klCoef: 0.3, rewardKlCoef, klEstimator: 'full', canaryBudget, loopGuard: 'off', lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt` };
    const trainer = new TrainerLoop(s.store, s.engine, { ...options, log: (l: string) => log.push(l) });
    await trainer.init();
    // record the β each step's loss was given (the real engine's call, observed, not replaced)
    const steps: Step[] = [];
    const forwardBackward = s.engine.forwardBackward.bind(s.engine);
    s.engine.forwardBackward = (data, spec) => {
      steps.push({ klCoef: spec.kind === 'ppo' ? spec.klCoef ?? 0 : Number.NaN, fall: trainer.canaryFall(), factor: trainer.canaryFactor() });
      return forwardBackward(data, spec);
    };
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false });
    for (let c = 0; c < 16; c++) { await dogConversation(s, c); await judge.tick(); await trainer.tick(); }
    s.engine.forwardBackward = forwardBackward;
    const status = trainer.status();
    // stateless: a restart on the same store and weights finds the same fall, so the same factor
    const restarted = new TrainerLoop(s.store, s.engine, { ...options, log: () => {} });
    await restarted.init();
    return { steps, log, status, restartedFactor: restarted.canaryFactor(), factor: trainer.canaryFactor() };
  } finally {
    await s.close();
  }
}

test('canary budget: past the budget β is the recipe\'s times the factor of the canary\'s fall; within it, the recipe\'s', { timeout: 300_000 }, async () => {
  const budget = 1e-3;
  const r = await train(budget);
  assert.ok(r.steps.length >= 3, `steps were taken (${r.steps.length})`);
  assert.equal(r.steps[0].fall, 0, 'the first step starts from the base: its canary is the base\'s');
  assert.equal(r.steps[0].klCoef, 0.3);
  const past = r.steps.filter((st) => st.fall > budget);
  assert.ok(past.length >= 1, `the canary fell past a budget this small (${r.steps.map((st) => st.fall.toFixed(4)).join(', ')})`);
  for (const st of r.steps) {
    assert.ok(Math.abs(st.factor - canaryKlFactor(st.fall, { ...CANARY_BUDGET_DEFAULTS, budget })) < 1e-12);
    assert.ok(Math.abs(st.klCoef - 0.3 * st.factor) < 1e-9, `β ${st.klCoef} at fall ${st.fall} (factor ${st.factor})`);
  }
  assert.ok(past.some((st) => st.factor > 1.5), 'β grew');
  assert.ok(r.log.some((l) => /β ×\d+\.\d\d \(canary \d+\.\d\d nats\/token below the base's, budget 0\.001\)/.test(l)), 'the step line says so');
  assert.equal(r.status.canaryBudget, budget);
  assert.equal(r.status.klFactor, r.factor);
  assert.equal(r.restartedFactor, r.factor, 'a restart takes the factor up where it was');
});

test('canary budget: with --reward-kl-coef both βs take the factor; off (0) leaves β alone', { timeout: 300_000 }, async () => {
  const r = await train(1e-3, 0.1);
  const grown = r.steps.filter((st) => st.factor > 1);
  assert.ok(grown.length >= 1);
  // the spec carries the larger β (the full one); each reward-trained answer scales it by 0.1/0.3 (learn/kl-scale.ts)
  for (const st of r.steps) assert.ok(Math.abs(st.klCoef - 0.3 * st.factor) < 1e-9);

  const off = await train(0);
  assert.ok(off.steps.every((st) => st.klCoef === 0.3 && st.factor === 1 && Number.isNaN(st.fall)));
  assert.equal(off.status.canaryBudget, undefined);
  assert.ok(off.log.every((l) => !l.includes('β ×')));
});

test('canary budget: a budget that is not a number ≥ 0 is refused', async () => {
  const s = await startTestServer();
  try {
    for (const canaryBudget of [-0.1, Number.NaN, Number.POSITIVE_INFINITY]) assert.throws(() => new TrainerLoop(s.store, s.engine, { canaryBudget, checkpointDir: `${s.dataDir}/ckpt` }), /canary budget must be a number ≥ 0/);
  } finally {
    await s.close();
  }
});
