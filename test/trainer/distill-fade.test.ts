// --distill-fade in the learning loop on stories260K: once the recent answers mostly please, a hinted turn's
// distillation set carries the faded weight — the same traffic without the fade gives the same set at full weight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { conversation, observedLoop } from '../helpers/observed-loop.ts';
import { distillFade } from '../../src/learn/distill-fade.ts';
import type { Datum } from '../../src/engine/types.ts';

/** Eight praised answers (two steps), then one complaint with a hint among three praised: the third step's batch. */
async function thirdBatch(fade: number): Promise<{ batch: Datum[]; step: string }> {
  const s = await startTestServer();
  try {
    const { lines, batches, judge, trainer } = await observedLoop(s, { distillFade: fade, anchorAnswers: 0, klCoef: 0.3, learningRate: 1e-2 });
    for (let c = 0; c < 8; c++) await conversation(s, c, false);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    for (let c = 8; c < 12; c++) await conversation(s, c, c === 8);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    assert.equal(trainer.step, 3, lines.join('\n'));
    return { batch: batches[2], step: lines.filter((l) => /trainer: step 3/.test(l))[0] };
  } finally {
    await s.close();
  }
}

test('--distill-fade: with 11 of the last 12 answers approved the hinted turn is distilled at the fade\'s weight (0.2 of it)', { timeout: 300_000 }, async () => {
  const want = distillFade([-1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 0.5);
  assert.equal(want, 0.2);
  const faded = await thirdBatch(0.5), full = await thirdBatch(0);
  assert.match(faded.step, /top-4 OPD on 1 .*faded to 0\.20/);
  assert.doesNotMatch(full.step, /faded/);
  assert.deepEqual(faded.batch.map((d) => !!d.distill), [true, false, false, false], 'the complaint alone has a hint');
  const a = faded.batch[0].distill!, b = full.batch[0].distill!;
  assert.deepEqual(a.ids, b.ids, 'the same traffic and steps: the same student top-K');
  let largest = 0;
  a.advantages.forEach((row, t) => row.forEach((x, v) => {
    assert.ok(Math.abs(x - want * b.advantages[t][v]) < 1e-9, `position ${t} entry ${v}: ${x} against ${want} × ${b.advantages[t][v]}`);
    largest = Math.max(largest, Math.abs(b.advantages[t][v]));
  }));
  assert.ok(largest > 0, 'the unfaded set has something to scale');
  // the reward terms do not fade
  faded.batch.forEach((d, j) => assert.deepEqual(d.advantages, full.batch[j].advantages));
});
