// The current weights' answers to stale samples' prompts: which samples get an anchor answer (table), and
// --stale-distill refresh in the learning loop on stories260K — a hinted turn two or more versions behind is
// distilled on the current weights' answer to its prompt, not on its old answer; fresher turns keep theirs.
// And the other stale distillation mode, --stale-distill prefix, in the loop: its weights from the recorded
// behaviour log-probs and the current weights' own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.ts';
import { conversation, observedLoop } from '../helpers/observed-loop.ts';
import { anchorPicks, ANCHOR_STALENESS } from '../../src/trainer/current-answers.ts';
import { prefixWeights } from '../../src/learn/staleness.ts';

test('anchorPicks: samples at least ANCHOR_STALENESS behind, stalest first, ties in batch order, at most max, none excluded', () => {
  assert.equal(ANCHOR_STALENESS, 2);
  const cases: [number[], number, number[], number[]][] = [
    [[0, 1, 1, 0], 4, [], []],
    [[2, 3, 2, 5], 4, [], [3, 1, 0, 2]],
    [[2, 3, 2, 5], 2, [], [3, 1]],
    [[2, 3, 2, 5], 2, [3], [1, 0]],
    [[4, 4, 1, 4], 3, [0], [1, 3]],
    [[6, 6], 0, [], []],
    [[], 4, [], []],
  ];
  for (const [staleness, max, exclude, expected] of cases) assert.deepEqual(anchorPicks(staleness, max, new Set(exclude)), expected, `${staleness} max ${max} without ${exclude}`);
});

test('--stale-distill refresh: a hinted turn two versions behind is distilled on the current weights\' answer; fresher turns on their own', { timeout: 300_000 }, async () => {
  const s = await startTestServer();
  try {
    const { lines, batches, judge, trainer } = await observedLoop(s, { staleDistill: 'refresh', anchorAnswers: 1, klCoef: 0.3, learningRate: 1e-2 });
    // twelve turns served by version 0 (three complaints with a hint, one praise per batch): trained by versions 0, 1 and 2
    const answers: number[][] = [];
    for (let c = 0; c < 12; c++) answers.push(await conversation(s, c, c % 4 !== 3));
    await judge.tick();
    await trainer.buildSamples();
    await trainer.tick();
    assert.equal(trainer.step, 3, lines.join('\n'));
    const steps = lines.filter((l) => /trainer: step \d/.test(l));
    const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
    for (const k of [0, 1]) {
      // the batch's own four answers, the three hinted ones distilled on themselves
      assert.equal(batches[k].length, 4);
      batches[k].forEach((d, j) => assert.ok(same(d.responseIds, answers[4 * k + j])));
      assert.deepEqual(batches[k].map((d) => !!d.distill), [true, true, true, false]);
      assert.doesNotMatch(steps[k], /current weights' answers|anchor/);
    }
    // two versions behind: the old answers keep their reward terms but lose their distillation sets, three refreshed
    // answers carry them (zero advantages), and the praised turn gets the one anchor answer
    const third = batches[2];
    assert.match(steps[2], /2\.0 versions behind .*top-4 OPD on 3 \(3 on the current weights' answers\).*, 1 anchor answer\(s\)/);
    assert.equal(third.length, 4 + 3 + 1);
    third.slice(0, 4).forEach((d, j) => { assert.ok(same(d.responseIds, answers[8 + j])); assert.equal(d.distill, undefined); });
    assert.ok(third.slice(0, 3).every((d) => d.advantages!.some((a) => a !== 0)), 'the complaints keep their reward terms');
    for (const d of third.slice(4)) {
      assert.ok(d.advantages!.every((a) => a === 0));
      assert.equal(d.behaviourLogprobs!.length, d.responseIds.length);
      assert.ok(d.responseIds.length <= 16);
    }
    assert.deepEqual(third.slice(4).map((d) => !!d.distill), [true, true, true, false]);
    for (const d of third.slice(4, 7)) {
      assert.equal(d.distill!.ids.length, d.responseIds.length, 'the set covers the refreshed answer position by position');
      assert.deepEqual(d.promptIds, third[0].promptIds);
    }
  } finally {
    await s.close();
  }
});

test('--stale-distill prefix: a stale hinted turn\'s distillation positions are weighted by min(1, Π current/behaviour) over the text before them', { timeout: 300_000 }, async () => {
  const s = await startTestServer();
  try {
    const { lines, batches, judge, trainer } = await observedLoop(s, { staleDistill: 'prefix', anchorAnswers: 0, klCoef: 0, learningRate: 3e-2 });
    const answers: number[][] = [];
    for (let c = 0; c < 8; c++) answers.push(await conversation(s, c, c % 4 !== 3));
    const behaviour = answers.map((_, c) => JSON.parse((s.store.sql(`SELECT response_logprobs FROM turns WHERE session_id = ? ORDER BY idx LIMIT 1`).get(`r-${c}`) as { response_logprobs: string }).response_logprobs) as number[]);
    await judge.tick();
    await trainer.buildSamples();
    await trainer.tick();
    assert.equal(trainer.step, 2, lines.join('\n'));
    const steps = lines.filter((l) => /trainer: step \d/.test(l));
    assert.doesNotMatch(steps[0], /stale contexts/, 'the first batch was sampled by the weights it trains');
    // the second batch is a version behind: its samples carry the current weights' log-probs (the PPO ratio's "old")
    // where the store keeps the behaviour's, and the weights of their distillation positions follow from the two
    let sum = 0, n = 0;
    batches[1].slice(0, 4).forEach((d, j) => {
      assert.equal(d.behaviourLogprobs!.length, behaviour[4 + j].length);
      if (!d.distill) return;
      const rho = prefixWeights(behaviour[4 + j], d.behaviourLogprobs!);
      assert.equal(rho[0], 1, 'the first position\'s context is the prompt alone');
      assert.ok(rho.every((w) => w >= 0 && w <= 1));
      rho.forEach((w, t) => { if (w === 0) assert.ok(d.distill!.advantages[t].every((a) => a === 0)); });
      sum += rho.reduce((a, b) => a + b, 0); n += rho.length;
    });
    assert.equal(n > 0, true, 'the hinted turns of the second batch were distilled');
    const logged = Number(/stale contexts distilled at weight ([\d.]+)/.exec(steps[1])?.[1]);
    assert.ok(Math.abs(logged - sum / n) < 0.005 + 1e-9, `logged ${logged}, recomputed ${sum / n}`);
    assert.ok(sum / n < 1, 'a version later, the old contexts weigh less than fresh ones');
  } finally {
    await s.close();
  }
});
