// bfloat16 weight storage (--weights-dtype bf16): half the weight memory, log-probs within a stated
// tolerance of float32, sampling and scoring still bit-identical on every kernel backend, LoRA
// training on top, and full-parameter training refused with a clear message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { FAST_KERNELS } from '../helpers/kernels.ts';
import { STORIES } from '../helpers/models.ts';

/** the tolerance docs/engine-kernels.md states for stories260K: per-token |Δ log-prob| vs float32 */
const MAX_ABS = 0.1, MEAN_ABS = 0.02;

for (const kernel of FAST_KERNELS) {
  test(`bf16 weights (${kernel}): half the memory, log-probs within ${MAX_ABS} (mean ${MEAN_ABS}) nats of float32, sampling = scoring to the bit`, async () => {
    const f32 = new EmbeddedRuntime(STORIES, { kernel }), bf16 = new EmbeddedRuntime(STORIES, { kernel, weightsDtype: 'bf16' });
    try {
      // the matrices halve; the norms stay float32
      assert.ok(bf16.info.weightBytes < 0.55 * f32.info.weightBytes, `${bf16.info.weightBytes} vs ${f32.info.weightBytes}`);
      const prompt = f32.tokenizer.encode('Once upon a time there was a little girl named Lily.');
      for (const seed of [3, 4]) {
        const r = bf16.generate(prompt, { maxTokens: 48, temperature: 1, topP: 1, topK: 0, seed, ignoreEos: true });
        const [scored] = bf16.score([{ promptIds: prompt, responseIds: r.ids }]);
        assert.deepEqual(Array.from(scored), Array.from(Float32Array.from(r.logprobs)), 'scoring reproduces the sampling log-probs exactly');
        const [reference] = f32.score([{ promptIds: prompt, responseIds: r.ids }]);
        let max = 0, sum = 0;
        for (let i = 0; i < scored.length; i++) { const d = Math.abs(scored[i] - reference[i]); max = Math.max(max, d); sum += d; }
        assert.ok(max > 0, 'bf16 rounding changes something (else this compares f32 with itself)');
        assert.ok(max < MAX_ABS && sum / scored.length < MEAN_ABS, `max |Δ| ${max}, mean ${sum / scored.length}`);
      }
      // greedy decoding mostly keeps the float32 model's choices
      const g32 = f32.generate(prompt, { maxTokens: 32, temperature: 0, topP: 1, topK: 0, ignoreEos: true });
      const g16 = bf16.generate(prompt, { maxTokens: 32, temperature: 0, topP: 1, topK: 0, ignoreEos: true });
      assert.ok(g16.ids.slice(0, 8).every((id, i) => id === g32.ids[i]), `${g16.ids} vs ${g32.ids}`);
    } finally {
      await f32.close(); await bf16.close();
    }
  });
}

test('bf16 weights: a LoRA adapter (float32) trains on top; full-parameter training is refused with the reason', async () => {
  const rt = new EmbeddedRuntime(STORIES, { weightsDtype: 'bf16' });
  try {
    const ids = rt.tokenizer.encode('The cat sat on the mat. The cat was happy and the sun was warm.');
    const datum = { promptIds: ids.slice(0, 4), responseIds: ids.slice(4) };
    rt.configureTraining({ rank: 4, alpha: 8, seed: 1 });
    const before = rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss;
    rt.optimStep({ learningRate: 3e-2 });
    for (let i = 0; i < 3; i++) { rt.forwardBackward([datum], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 3e-2 }); }
    const after = rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss;
    assert.ok(after < before - 0.1, `loss ${before} → ${after}`);
    assert.throws(() => rt.configureTraining(null), /full-parameter training needs float32 weights: load the model with --weights-dtype f32/);
  } finally {
    await rt.close();
  }
});
