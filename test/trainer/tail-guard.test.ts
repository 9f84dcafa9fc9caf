// --tail-guard in the learning loop on stories260K: the same traffic with and without it trains the same batch, except
// that the approved answers' tokens sampled below the guard's probability carry no positive advantage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { conversation, observedLoop } from '../helpers/observed-loop.ts';
import type { Datum } from '../../src/engine/types.ts';

/** Four conversations, the first a complaint: the first step's batch and its log line. */
async function firstBatch(tailGuard: number): Promise<{ batch: Datum[]; step: string; tailTokens: number }> {
  const s = await startTestServer();
  try {
    const { lines, batches, judge, trainer } = await observedLoop(s, { tailGuard, anchorAnswers: 0, klCoef: 0.3, learningRate: 1e-2, method: 'binary', rewardBaseline: 'none' });
    for (let c = 0; c < 4; c++) await conversation(s, c, c === 0);
    await judge.tick(); await trainer.buildSamples(); await trainer.tick();
    assert.equal(trainer.step, 1, lines.join('\n'));
    return { batch: batches[0], step: lines.filter((l) => /trainer: step 1/.test(l))[0], tailTokens: trainer.counts.tailTokens };
  } finally {
    await s.close();
  }
}

test('--tail-guard: an approved answer\'s tokens sampled below the probability get advantage 0; complaints and other tokens are unchanged', { timeout: 300_000 }, async () => {
  const p = 0.05;
  const guarded = await firstBatch(p), plain = await firstBatch(0);
  let zeroed = 0, positiveKept = 0, negative = 0;
  guarded.batch.forEach((d, j) => {
    const want = plain.batch[j];
    assert.deepEqual(d.responseIds, want.responseIds, 'the same traffic');
    assert.deepEqual(d.behaviourLogprobs, want.behaviourLogprobs);
    d.advantages!.forEach((a, t) => {
      const b = want.advantages![t], lp = d.behaviourLogprobs![t];
      if (b > 0 && lp < Math.log(p)) { assert.equal(a, 0, `sample ${j} token ${t}`); zeroed++; }
      else { assert.equal(a, b, `sample ${j} token ${t}`); if (b > 0) positiveKept++; if (b < 0) negative++; }
    });
  });
  assert.ok(zeroed > 0 && positiveKept > 0 && negative > 0, `zeroed ${zeroed}, kept ${positiveKept}, negative ${negative}`);
  assert.equal(guarded.tailTokens, zeroed);
  assert.match(guarded.step, new RegExp(`, ${zeroed} tail token\\(s\\) not reinforced`));
  assert.doesNotMatch(plain.step, /tail token/);
});
