// --settle in the learning loop on stories260K: while the recent answers mostly miss, a step takes the whole learning
// rate; once they mostly please, the step's rate is the settled share of it; without the flag the rate never changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { conversation, observedLoop } from '../helpers/observed-loop.ts';
import { distillFade } from '../../src/learn/distill-fade.ts';

/** Four complaints (one step), then eight praised answers (two steps): each step's log line. */
async function stepLines(settle: number): Promise<string[]> {
  const s = await startTestServer();
  try {
    const { lines, judge, trainer } = await observedLoop(s, { settle, anchorAnswers: 0, klCoef: 0.3, learningRate: 1e-2 });
    for (let c = 0; c < 4; c++) await conversation(s, c, true);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    for (let c = 4; c < 12; c++) await conversation(s, c, false);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    assert.equal(trainer.step, 3, lines.join('\n'));
    return [1, 2, 3].map((n) => lines.find((l) => new RegExp(`trainer: step ${n} `).test(l)) ?? '');
  } finally {
    await s.close();
  }
}

test('--settle 0.5: four misses train at the full rate; with 8 of the last 12 approved, then 8 of 8 plus 4 misses, the rate settles', { timeout: 300_000 }, async () => {
  const rates = [distillFade([-1, -1, -1, -1], 0.5), distillFade([1, 1, 1, 1, -1, -1, -1, -1], 0.5), distillFade([1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1], 0.5)].map((f) => f * 1e-2);
  assert.deepEqual(rates.map((r) => r.toExponential(2)), ['1.00e-2', '1.00e-2', '6.67e-3']);
  const settled = await stepLines(0.5);
  settled.forEach((line, i) => assert.match(line, new RegExp(`, lr ${rates[i].toExponential(2).replace('.', '\\.')}, `), line));
  const plain = await stepLines(0);
  for (const line of plain) { assert.match(line, /trainer: step \d/); assert.doesNotMatch(line, /, lr /); }
});

test('--settle under OPD alone: approved answers that became no sample still count as pleased', { timeout: 300_000 }, async () => {
  // four complaints (a step at the full rate), twelve praised answers (no hint, so no OPD sample and no step), four
  // complaints: the last step's window holds 8 misses in 20 judged answers, not 8 in 8
  const s = await startTestServer();
  try {
    const { lines, judge, trainer } = await observedLoop(s, { method: 'opd', settle: 0.5, anchorAnswers: 0, klCoef: 0.3, learningRate: 1e-2 });
    const round = async (from: number, to: number, complaint: boolean) => {
      for (let c = from; c < to; c++) await conversation(s, c, complaint);
      await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    };
    await round(0, 4, true);
    await round(4, 16, false);
    assert.equal(trainer.step, 1, lines.join('\n'));
    await round(16, 20, true);
    assert.equal(trainer.step, 2, lines.join('\n'));
    const want = [distillFade([-1, -1, -1, -1], 0.5), distillFade([...new Array(12).fill(1), ...new Array(8).fill(-1)], 0.5)].map((f) => (f * 1e-2).toExponential(2));
    assert.deepEqual(want, ['1.00e-2', '8.00e-3']);
    [1, 2].forEach((n, i) => assert.match(lines.find((l) => new RegExp(`trainer: step ${n} `).test(l)) ?? '', new RegExp(`, lr ${want[i].replace('.', '\\.')}, `), lines.join('\n')));
  } finally {
    await s.close();
  }
});
