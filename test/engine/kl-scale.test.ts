// Datum.klScale on the embedded trainer: a datum's KL term is the spec's β times its scale. The gradient is linear in
// the term's weight, so a datum at scale s must train as the mix (1 − s)·(no KL) + s·(full KL), a datum at 0 as if the
// spec had no KL term, and a batch mixing scales as its data trained apart. Checked for the sampled-token (k3) and the
// exact (full) KL terms on a tiny random model; a bad scale is refused before anything is accumulated.
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

function assertClose(a: number[], b: number[], what: string): void {
  assert.equal(a.length, b.length);
  const scale = Math.max(1e-6, ...b.map(Math.abs));
  const worst = Math.max(...a.map((x, i) => Math.abs(x - b[i])));
  assert.ok(worst < 1e-4 * scale, `${what}: worst difference ${worst} against a largest entry of ${scale}`);
}

test('klScale weighs one datum\'s KL term: 0 is no KL, s mixes linearly, a batch trains as its data apart; a bad scale is refused', async () => {
  const dir = join(tmp.dir, 'kl-scale');
  tinyModel(dir, tinyConfig('llama'), { scale: 10 });
  const model = Transformer.load(dir, { kernel: 'ts' });
  try {
    const tr = new LoraTrainer(model, { rank: 4, alpha: 8, seed: 1 });
    // a trained adapter, so the policy differs from the base and the KL term has a gradient
    const rng = new Rng(3);
    for (const t of tr.adapter.tensors()) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = (rng.next() * 2 - 1) * 0.2;
    const a: Datum = { promptIds: [1, 7, 9], responseIds: [20, 30, 40, 50], advantages: [1, -0.5, 1, -0.5] };
    const b: Datum = { promptIds: [1, 100], responseIds: [200, 300, 400], advantages: [-1, 1, 1], lossMask: [1, 0, 1] };
    const current = tr.logprobs([a, b], tr.adapter);
    [a, b].forEach((d, k) => { d.behaviourLogprobs = Array.from(current[k], (lp, t) => lp + 0.05 * Math.sin(t + k)); });
    for (const klEstimator of ['k3', 'full'] as const) {
      const spec: LossSpec = { kind: 'ppo', klCoef: 0.3, klEstimator };
      const none = gradientOf(tr, [a], { ...spec, klCoef: 0 }), whole = gradientOf(tr, [a], spec);
      assert.ok(Math.max(...whole.g.map((x, i) => Math.abs(x - none.g[i]))) > 1e-4, `${klEstimator}: the KL term moves the gradient`);
      assertClose(gradientOf(tr, [{ ...a, klScale: 0 }], spec).g, none.g, `${klEstimator}, scale 0`);
      assertClose(gradientOf(tr, [{ ...a, klScale: 1 }], spec).g, whole.g, `${klEstimator}, scale 1`);
      const half = gradientOf(tr, [{ ...a, klScale: 0.5 }], spec);
      assertClose(half.g, none.g.map((x, i) => 0.5 * (x + whole.g[i])), `${klEstimator}, scale 0.5`);
      assert.ok(Math.abs(half.loss - 0.5 * (none.loss + whole.loss)) < 1e-4 * Math.max(1, Math.abs(whole.loss)), `${klEstimator}: the loss mixes too (${half.loss} against ${none.loss} and ${whole.loss})`);
      // a batch of a at full β and b without KL: the sum of a trained with it and b trained without
      const mixed = gradientOf(tr, [a, { ...b, klScale: 0 }], spec).g;
      const apart = gradientOf(tr, [a], spec).g.map((x, i) => x + gradientOf(tr, [b], { ...spec, klCoef: 0 }).g[i]);
      assertClose(mixed, apart, `${klEstimator}, mixed batch`);
    }
    for (const bad of [-0.5, Number.NaN, Infinity]) {
      assert.throws(() => tr.forwardBackward([{ ...a, klScale: bad }], { kind: 'ppo', klCoef: 0.3 }), (e: Error & { code?: string }) => e.code === 'bad_request' && /klScale must be a finite number/.test(e.message));
    }
    assert.equal(tr.pendingTokens, 0);
    tr.release();
  } finally {
    await model.close();
  }
});
