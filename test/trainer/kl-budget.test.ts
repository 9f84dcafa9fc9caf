// The KL budget in the trainer, on stories260K: while a step's KL to the base is over the budget, β of the next step
// grows by the controller's rule (learn/kl-budget.ts), and without a budget β stays the recipe's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { dogConversation } from '../helpers/dog-user.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import type { TrainerOptions } from '../../src/trainer/options.ts';
import { nextKlCoef, KL_BUDGET_DEFAULTS } from '../../src/learn/kl-budget.ts';

async function train(budget: number | null): Promise<{ beta: number; kls: number[]; log: string[]; status: Record<string, unknown> }> {
  const s = await startTestServer();
  try {
    const log: string[] = [];
    const options: Partial<TrainerOptions> & { checkpointDir: string } = { method: 'binary', rewardBaseline: 'none', batchSize: 4, learningRate: 1e-2, klCoef: 0.3, klEstimator: 'full', klBudget: budget, loopGuard: 'off', lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt` };
    const trainer = new TrainerLoop(s.store, s.engine, { ...options, log: (l: string) => log.push(l) });
    await trainer.init();
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false });
    for (let c = 0; c < 16; c++) { await dogConversation(s, c); await judge.tick(); await trainer.tick(); }
    const kls = (s.store.sql(`SELECT kl FROM training_steps WHERE status = 'published' ORDER BY step`).all() as { kl: number }[]).map((r) => r.kl);
    // a restart on the same store goes on at the same β: it is replayed from the steps' recorded KLs
    const restarted = new TrainerLoop(s.store, s.engine, { ...options, log: () => {} });
    await restarted.init();
    assert.equal(restarted.klCoef, trainer.klCoef);
    return { beta: trainer.klCoef, kls, log, status: trainer.status() };
  } finally {
    await s.close();
  }
}

test('KL budget: β follows the recorded step KLs by the controller\'s rule; no budget leaves β alone', { timeout: 300_000 }, async () => {
  const budget = 1e-4;
  const over = await train(budget);
  assert.ok(over.kls.length >= 2, `steps were taken (${over.kls.length})`);
  assert.ok(over.kls.slice(1).every((kl) => kl > budget), `after the first step the policy is over a budget this small (${over.kls.map((k) => k.toFixed(5)).join(', ')})`);
  const want = over.kls.reduce((beta, kl) => nextKlCoef(beta, kl, 0.3, { ...KL_BUDGET_DEFAULTS, target: budget }), 0.3);
  assert.ok(Math.abs(over.beta - want) < 1e-9, `β ${over.beta} against ${want} from the recorded KLs`);
  assert.ok(over.beta > 0.3 * 1.19 ** (over.kls.length - 2), `β grew a step at a time (${over.beta})`);
  assert.equal(over.status.klCoef, over.beta);
  // the first step starts from the base (KL 0, β stays at its floor); the second is over, so the third runs at β × 1.2
  assert.match(over.log.find((l) => l.includes('→ version 2'))!, /\(β 0\.300, budget 0\.0001\)/);
  assert.match(over.log.find((l) => l.includes('→ version 3'))!, /\(β 0\.360, budget 0\.0001\)/);

  const free = await train(null);
  assert.equal(free.beta, 0.3);
  assert.equal(free.status.klCoef, undefined);
  assert.ok(free.log.every((l) => !l.includes('budget')));
});

test('KL budget: a budget that is not a positive number is refused', async () => {
  const s = await startTestServer();
  try {
    for (const klBudget of [0, -0.1, Number.NaN]) assert.throws(() => new TrainerLoop(s.store, s.engine, { klBudget, checkpointDir: `${s.dataDir}/ckpt` }), /KL budget must be > 0/);
  } finally {
    await s.close();
  }
});
