// Datum.unlikelihood on the embedded trainer: each weighted token adds w·(−log(1 − p)) to the loss, its gradient is
// linear in the weight (0 trains as if absent), steps on it lower exactly the weighted tokens' probabilities, and bad
// weights are refused before anything is accumulated. A tiny random model with a trained adapter.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Transformer } from '../../src/engine/embedded/model.ts';
import { LoraTrainer } from '../../src/engine/embedded/trainer.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import type { Datum } from '../../src/engine/types.ts';
import type { LossSpec } from '../../src/learn/losses.ts';
import { tempDir, tinyModel } from '../helpers/models.ts';
import { gradientOf } from '../helpers/gradcheck.ts';

const tmp = tempDir();
after(tmp.cleanup);

test('unlikelihood weights add w·(−log(1 − p)) per token, train linearly in w, lower the weighted tokens; bad weights are refused', async () => {
  const dir = join(tmp.dir, 'unlikelihood');
  tinyModel(dir, tinyConfig('llama'), { scale: 10 });
  const model = Transformer.load(dir, { kernel: 'ts' });
  try {
    const tr = new LoraTrainer(model, { rank: 4, alpha: 8, seed: 1 });
    const rng = new Rng(5);
    for (const t of tr.adapter.tensors()) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = (rng.next() * 2 - 1) * 0.2;
    const responseIds = [20, 30, 20, 30, 20, 30];
    const d: Datum = { promptIds: [1, 7, 9], responseIds, advantages: responseIds.map(() => 0) };
    const before = Array.from(tr.logprobs([d], tr.adapter)[0]);
    d.behaviourLogprobs = [...before];
    const spec: LossSpec = { kind: 'ppo' };
    const weights = [0, 0, 0, 0, 1, 1];
    // with zero advantages the PPO term is 0: the loss is the unlikelihood term alone
    const want = before.reduce((s, lp, t) => s + weights[t] * -Math.log1p(-Math.exp(lp)), 0);
    const full = gradientOf(tr, [{ ...d, unlikelihood: weights }], spec);
    assert.ok(Math.abs(full.loss - want) < 1e-4 * Math.max(1, want), `loss ${full.loss} against ${want}`);
    const none = gradientOf(tr, [d], spec);
    assert.ok(none.g.every((x) => x === 0), 'no advantage and no weight: no gradient');
    assert.deepEqual(gradientOf(tr, [{ ...d, unlikelihood: weights.map(() => 0) }], spec).g, none.g, 'weight 0 is no term');
    const half = gradientOf(tr, [{ ...d, unlikelihood: weights.map((w) => w / 2) }], spec).g;
    const worst = Math.max(...half.map((x, i) => Math.abs(x - full.g[i] / 2)));
    assert.ok(worst < 1e-5 * Math.max(...full.g.map(Math.abs)), `linear in the weight (worst ${worst})`);
    // a few steps on the term lower the weighted tokens' probabilities
    for (let i = 0; i < 5; i++) { tr.forwardBackward([{ ...d, unlikelihood: weights }], spec); tr.optimStep({ learningRate: 1e-2 }); }
    const after_ = Array.from(tr.logprobs([d], tr.adapter)[0]);
    for (const t of [4, 5]) assert.ok(after_[t] < before[t] - 1e-3, `token ${t}: ${after_[t]} against ${before[t]}`);
    for (const bad of [[-1, 0, 0, 0, 0, 0], [Number.NaN, 0, 0, 0, 0, 0], [0, 0, 0]]) {
      assert.throws(() => tr.forwardBackward([{ ...d, unlikelihood: bad }], spec), (e: Error & { code?: string }) => e.code === 'bad_request', String(bad));
    }
    assert.throws(() => tr.forwardBackward([{ ...d, unlikelihood: weights }], { kind: 'cross_entropy' }), /need the ppo loss/);
    assert.equal(tr.pendingTokens, 0);
    tr.release();
  } finally {
    await model.close();
  }
});
