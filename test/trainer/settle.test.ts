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
