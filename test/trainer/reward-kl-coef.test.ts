// --reward-kl-coef in the learning loop on stories260K (top-K combine): the hinted complaints are distilled and keep
// --kl-coef; the praised answers, trained by their reward alone or distilled from praise that says what to keep, take
// the reward β. Without the option every datum takes --kl-coef (no scale at all).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { conversation, observedLoop } from '../helpers/observed-loop.ts';
import type { Datum } from '../../src/engine/types.ts';
import type { LossSpec } from '../../src/learn/losses.ts';

/** Praise that also says what to keep: the judge approves the answer (+1) and gives a hint, so it is distilled. */
const PRAISE_WITH_HINT = 'I love it, thanks! Please write more stories about a dog.';

/** Four complaints with a hint (one step), then four praised answers (another; `praise`: the user's words, else the helper's): what each step trained on, and its loss. */
async function twoSteps(rewardKlCoef: number | null, praise?: string): Promise<{ batches: Datum[][]; losses: LossSpec[] }> {
  const s = await startTestServer();
  try {
    const { lines, batches, losses, judge, trainer } = await observedLoop(s, { klCoef: 0.3, rewardKlCoef, anchorAnswers: 0, rewardBaseline: 'lift' });
    for (let c = 0; c < 4; c++) await conversation(s, c, true);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    for (let c = 4; c < 8; c++) await conversation(s, c, praise ?? false);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    assert.equal(trainer.step, 2, lines.join('\n'));
    return { batches, losses };
  } finally {
    await s.close();
  }
}

const betaOf = (d: Datum, spec: LossSpec) => (spec.kind === 'ppo' ? (spec.klCoef ?? 0) * (d.klScale ?? 1) : 0);

test('--reward-kl-coef 0.1: distilled complaints train at β 0.3, praised answers at 0.1; without it every answer at 0.3', { timeout: 300_000 }, async () => {
  const split = await twoSteps(0.1);
  const [complaints, praise] = split.batches;
  assert.ok(complaints.some((d) => d.distill), 'the hinted complaints carry a distillation set');
  for (const d of complaints) assert.ok(Math.abs(betaOf(d, split.losses[0]) - (d.distill ? 0.3 : 0.1)) < 1e-12, `complaint ${d.distill ? 'distilled' : 'not distilled'}: β ${betaOf(d, split.losses[0])}`);
  assert.ok(praise.length >= 4 && praise.every((d) => !d.distill), 'the praised answers have no hint to distil');
  for (const d of praise) assert.ok(Math.abs(betaOf(d, split.losses[1]) - 0.1) < 1e-12, `praised answer: β ${betaOf(d, split.losses[1])}`);

  const plain = await twoSteps(null);
  for (const [i, batch] of plain.batches.entries()) {
    assert.equal((plain.losses[i] as { klCoef?: number }).klCoef, 0.3);
    for (const d of batch) assert.equal(d.klScale, undefined);
  }
});

test('--reward-kl-coef 0.1: a praised answer that is also distilled (the praise says what to keep) trains at the reward β', { timeout: 300_000 }, async () => {
  const { batches, losses } = await twoSteps(0.1, PRAISE_WITH_HINT);
  const praise = batches[1];
  assert.ok(praise.length >= 4 && praise.every((d) => d.distill), 'every praised answer carries a distillation set from the praise\'s hint');
  for (const d of praise) assert.ok(Math.abs(betaOf(d, losses[1]) - 0.1) < 1e-12, `approved, distilled answer: β ${betaOf(d, losses[1])}`);
  for (const d of batches[0]) if (d.distill) assert.ok(Math.abs(betaOf(d, losses[0]) - 0.3) < 1e-12, 'a distilled complaint keeps --kl-coef');
});
