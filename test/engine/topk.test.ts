// Top-K log-probs for distillation: scoring's top-K equals sampling's top_logprobs (same ids, same bits),
// gathered log-probs equal the top-K ones, the top-K distillation loss's backward pass matches finite
// differences, and malformed top-K requests are refused with clear errors.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { Transformer } from '../../src/engine/embedded/model.ts';
import { LoraTrainer } from '../../src/engine/embedded/trainer.ts';
import { scoreStepsTopK } from '../../src/engine/embedded/score.ts';
import { ppoToken } from '../../src/learn/losses.ts';
import { topkToken } from '../../src/learn/topk-opd.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import { collect, type Datum } from '../../src/engine/types.ts';
import type { LossSpec } from '../../src/learn/losses.ts';
import { STORIES, tempDir, tinyModel } from '../helpers/models.ts';
import { adapterDirections, centralDifference, gradientAlong } from '../helpers/gradcheck.ts';

const tmp = tempDir();
after(tmp.cleanup);

test('top-K log-probs from scoring equal those from sampling (ids and values), at T = 1 and T = 0.7, for base and trained weights', async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  try {
    await engine.configureTraining({ rank: 4, alpha: 8, seed: 3 });
    const prompt = engine.tokenizer.encode('Once upon a time');
    // one step so the published version differs from the base
    const story = engine.tokenizer.encode('Once upon a time, a dog ran to the park.').slice(prompt.length);
    await engine.forwardBackward([{ promptIds: prompt, responseIds: story }], { kind: 'cross_entropy' });
    await engine.optimStep({ learningRate: 5e-2 });
    await engine.publish(await engine.saveWeights());
    for (const [temperature, weights] of [[1, 'published'], [0.7, 'published'], [1, 'base']] as const) {
      const r = await collect(engine.sample(prompt, { maxTokens: 30, temperature, topP: 1, topK: 0, seed: 5, topLogprobs: 4, weights }));
      const tokens: { top: { id: number; logprob: number }[] }[] = [];
      for await (const ev of engine.sample(prompt, { maxTokens: 30, temperature, topP: 1, topK: 0, seed: 5, topLogprobs: 4, weights })) if (ev.type === 'token') tokens.push(ev.token as never);
      assert.equal(tokens.length, r.ids.length);
      const [s] = await engine.scoreTopK([{ promptIds: prompt, responseIds: r.ids, gatherIds: tokens.map((t) => t.top.map((x) => x.id).reverse()) }], 4, { temperature, adapter: weights });
      // the sampled token's log-prob is the same number, stored as float32 by scoring
      assert.deepEqual(Array.from(s.logprobs), r.logprobs.map(Math.fround), `T=${temperature} ${weights}: sampled-token log-probs`);
      for (let t = 0; t < r.ids.length; t++) {
        assert.deepEqual(s.topIds[t], tokens[t].top.map((x) => x.id), `T=${temperature} ${weights} token ${t}: top-K ids`);
        assert.deepEqual(s.topLogprobs[t], tokens[t].top.map((x) => x.logprob), `T=${temperature} ${weights} token ${t}: top-K log-probs`);
        assert.deepEqual(s.gathered![t], [...s.topLogprobs[t]].reverse(), `token ${t}: gathered ids in the order asked`);
        // most likely first, and the sampled token's log-prob is never above the best one
        for (let j = 1; j < 4; j++) assert.ok(s.topLogprobs[t][j] <= s.topLogprobs[t][j - 1]);
        assert.ok(s.logprobs[t] <= s.topLogprobs[t][0] + 1e-6);
      }
    }
    // plain scoring is unchanged by the top-K path
    const r = await collect(engine.sample(prompt, { maxTokens: 20, temperature: 1, topP: 1, topK: 0, seed: 9 }));
    const [plain] = await engine.score([{ promptIds: prompt, responseIds: r.ids }]);
    const [withTop] = await engine.scoreTopK([{ promptIds: prompt, responseIds: r.ids }], 0);
    assert.deepEqual(Array.from(plain), Array.from(withTop.logprobs));
    assert.equal(withTop.gathered, null);
    // bad requests: clear errors, nothing breaks
    await assert.rejects(engine.scoreTopK([{ promptIds: prompt, responseIds: r.ids, gatherIds: [[1]] }], 4), /gatherIds has 1 entries/);
    await assert.rejects(engine.scoreTopK([{ promptIds: prompt, responseIds: [5], gatherIds: [[99999]] }], 4), /gather id 99999 is outside the vocabulary/);
    await assert.rejects(engine.scoreTopK([{ promptIds: prompt, responseIds: [5] }], -1), /integer k/);
    await assert.rejects(engine.forwardBackward([{ promptIds: prompt, responseIds: [5, 6], advantages: [0, 0], behaviourLogprobs: [-1, -1], distill: { ids: [[1, 2]], oldLogprobs: [[-1, -1]], advantages: [[0, 0]] } }], { kind: 'ppo' }), /distill.ids has 1 entries for 2/);
    await assert.rejects(engine.forwardBackward([{ promptIds: prompt, responseIds: [5], advantages: [0], behaviourLogprobs: [-1], distill: { ids: [[1, 2]], oldLogprobs: [[-1]], advantages: [[0, 0]] } }], { kind: 'ppo' }), /differ in size/);
    await assert.rejects(engine.forwardBackward([{ promptIds: prompt, responseIds: [5], distill: { ids: [[1]], oldLogprobs: [[-1]], advantages: [[0]] } }], { kind: 'cross_entropy' }), /need the ppo loss/);
    assert.equal((await collect(engine.sample(prompt, { maxTokens: 4, temperature: 0, topP: 1, topK: 0 }))).ids.length, 4);
  } finally {
    await engine.close();
  }
});

/** The loss forwardBackward accumulates (token sum), recomputed from scored log-probs. */
function lossSum(model: Transformer, tr: LoraTrainer, data: Datum[], T: number): number {
  const steps = scoreStepsTopK(model, data.map((d) => ({ ...d, gatherIds: d.distill!.ids })), tr.adapter, T, () => 4096, 0);
  let r = steps.next();
  while (!r.done) r = steps.next();
  let sum = 0;
  r.value.forEach((s, k) => {
    const d = data[k];
    for (let t = 0; t < d.responseIds.length; t++) {
      const mask = d.lossMask?.[t] ?? 1;
      const l = ppoToken(s.logprobs[t], d.behaviourLogprobs![t], d.advantages![t], 0.2, 0.28).loss + topkToken(s.gathered![t], d.distill!.oldLogprobs[t], d.distill!.advantages[t], 0.2, 0.28).loss;
      sum += l * mask;
    }
  });
  return sum;
}

for (const kernel of ['ts', 'wasm'] as const) {
  test(`gradient check (${kernel} kernel): PPO on the sampled token plus the top-K distillation sum matches finite differences`, async () => {
    const dir = join(tmp.dir, `topk-${kernel}`);
    tinyModel(dir, tinyConfig('llama'), { scale: 10 });
    const model = Transformer.load(dir, { kernel });
    try {
      const tr = new LoraTrainer(model, { rank: 4, alpha: 8, seed: 1 });
      const rng = new Rng(2);
      for (const t of tr.adapter.tensors()) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = (rng.next() * 2 - 1) * 0.2;
      for (const T of [1, 0.7]) {
        const data: Datum[] = [
          { promptIds: [1, 7, 9, 11], responseIds: [20, 30, 40, 50, 60] },
          { promptIds: [1, 100], responseIds: [200, 300, 400], lossMask: [1, 0, 1] },
        ];
        // the current top-4 as the old set, old log-probs near the current ones (ratios inside the clip range)
        const steps = scoreStepsTopK(model, data, tr.adapter, T, () => 4096, 4);
        let r = steps.next();
        while (!r.done) r = steps.next();
        data.forEach((d, k) => {
          const s = r.value[k];
          d.behaviourLogprobs = Array.from(s.logprobs, (lp, t) => lp + 0.03 * Math.sin(t + k));
          d.advantages = d.responseIds.map((_, t) => (t % 2 ? 0.7 : -0.4));
          d.temperature = T;
          d.distill = {
            ids: s.topIds, oldLogprobs: s.topLogprobs.map((row, t) => row.map((lp, j) => lp + 0.04 * Math.cos(t + j + k))),
            advantages: s.topIds.map((row, t) => row.map((_, j) => ((t + j + k) % 3 === 0 ? -0.3 : 0.25))),
          };
        });
        const dirs = adapterDirections(tr, rng);
        tr.grads.zero(); tr.pendingTokens = 0;
        const m = tr.forwardBackward(data, { kind: 'ppo' } as LossSpec);
        assert.ok(m.distill && m.distill.tokens === 7, 'the distill metrics count the unmasked tokens');
        const analytic = gradientAlong(tr, dirs);
        const numeric = centralDifference(tr, dirs, () => lossSum(model, tr, data, T));
        const rel = Math.abs(analytic - numeric) / Math.max(Math.abs(numeric), 1e-6);
        assert.ok(Math.abs(analytic) > 1e-4, `the directional derivative should not vanish (${analytic})`);
        assert.ok(rel < 1e-2, `T=${T}: analytic ${analytic} vs numeric ${numeric} (relative error ${rel.toExponential(2)})`);
        // without the distill sets the gradient differs: the set term is really in the backward pass
        tr.grads.zero(); tr.pendingTokens = 0;
        tr.forwardBackward(data.map(({ distill: _d, ...rest }) => rest), { kind: 'ppo' } as LossSpec);
        const without = gradientAlong(tr, dirs);
        assert.ok(Math.abs(without - analytic) > 1e-3 * Math.abs(analytic), 'the distill term changes the gradient');
      }
      tr.release();
    } finally {
      await model.close();
    }
  });
}
