// int8 weight storage (--weights-dtype int8: one byte a weight, a float32 scale per output row):
// a quarter of the weight memory, log-probs within a stated tolerance of float32, sampling and
// scoring still bit-identical on every kernel backend, LoRA training on top, and full-parameter
// training refused with a clear message. The quantizer itself is checked on a table of cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { int8Quantize, int8Scale, packPanels, packedSlots, packedAt, unpackRow, int8RowScale } from '../../src/engine/embedded/kernels/packed.ts';
import { FAST_KERNELS } from '../helpers/kernels.ts';
import { STORIES } from '../helpers/models.ts';

/** the tolerance docs/native-kernels.md states for stories260K: per-token |log-prob(int8) − log-prob(f32)| */
const MAX_ABS = 0.3, MEAN_ABS = 0.05;

test('int8 quantizer: scale = max|w|/127, round half away from zero, clamp to ±127, no negative zero', () => {
  const cases: [number, number, number][] = [
    // [w, scale, q]
    [1, 1 / 127, 127], [-1, 1 / 127, -127], [0.5, 1, 1], [-0.5, 1, -1], [0.49, 1, 0], [-0.2, 1, 0], [2.5, 1, 3], [-2.5, 1, -3],
    [1000, 1, 127], [-1000, 1, -127], [0.3, 0, 0], [Number.NaN, 1, 0],
  ];
  for (const [w, s, q] of cases) assert.ok(Object.is(int8Quantize(w, s), q), `q(${w}, ${s}) = ${int8Quantize(w, s)}, want ${q}`);
  assert.equal(int8Scale([0.5, -2, 1], 0, 3), Math.fround(2 / 127));
  assert.equal(int8Scale([3, 0, 0, 0], 1, 3), 0);
  // a panel: 13 rows (a partial second panel), the stored integers and scales read back
  const rows = 13, cols = 5;
  const w = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 1.3) * (1 + (i % 7)));
  const data = new Float32Array(packedSlots(rows, cols, 'int8'));
  assert.equal(data.length, 2 * (2 * cols + 8));
  packPanels(w, rows, cols, data, 'int8');
  const m = { data, rows, cols, dtype: 'int8' as const }, row = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    const s = int8Scale(w, r * cols, cols);
    assert.equal(int8RowScale(m, r), s);
    unpackRow(m, r, row);
    for (let k = 0; k < cols; k++) {
      assert.equal(packedAt(m, r, k), int8Quantize(w[r * cols + k], s));
      assert.equal(row[k], Math.fround(int8Quantize(w[r * cols + k], s) * s));
      assert.ok(Math.abs(row[k] - w[r * cols + k]) <= s / 2 + 1e-6, `row ${r} col ${k}: ${row[k]} vs ${w[r * cols + k]}`);
    }
  }
});

for (const kernel of FAST_KERNELS) {
  test(`int8 weights (${kernel}): a quarter of the memory, log-probs within ${MAX_ABS} (mean ${MEAN_ABS}) nats of float32, sampling = scoring to the bit`, async () => {
    const f32 = new EmbeddedRuntime(STORIES, { kernel }), int8 = new EmbeddedRuntime(STORIES, { kernel, weightsDtype: 'int8' });
    try {
      // the matrices shrink to a quarter plus 4 bytes of scale per row; the norms stay float32
      assert.ok(int8.info.weightBytes < 0.3 * f32.info.weightBytes, `${int8.info.weightBytes} vs ${f32.info.weightBytes}`);
      const prompt = f32.tokenizer.encode('Once upon a time there was a little girl named Lily.');
      for (const seed of [3, 4]) {
        const r = int8.generate(prompt, { maxTokens: 48, temperature: 1, topP: 1, topK: 0, seed, ignoreEos: true });
        const [scored] = int8.score([{ promptIds: prompt, responseIds: r.ids }]);
        assert.deepEqual(Array.from(scored), Array.from(Float32Array.from(r.logprobs)), 'scoring reproduces the sampling log-probs exactly');
        const [reference] = f32.score([{ promptIds: prompt, responseIds: r.ids }]);
        let max = 0, sum = 0;
        for (let i = 0; i < scored.length; i++) { const d = Math.abs(scored[i] - reference[i]); max = Math.max(max, d); sum += d; }
        assert.ok(max > 0, 'int8 rounding changes something (else this compares f32 with itself)');
        assert.ok(max < MAX_ABS && sum / scored.length < MEAN_ABS, `max |Δ| ${max}, mean ${sum / scored.length}`);
      }
      // greedy decoding keeps the float32 model's first tokens
      const g32 = f32.generate(prompt, { maxTokens: 32, temperature: 0, topP: 1, topK: 0, ignoreEos: true });
      const g8 = int8.generate(prompt, { maxTokens: 32, temperature: 0, topP: 1, topK: 0, ignoreEos: true });
      assert.ok(g8.ids.slice(0, 8).every((id, i) => id === g32.ids[i]), `${g8.ids} vs ${g32.ids}`);
    } finally {
      await f32.close(); await int8.close();
    }
  });
}

test('int8 weights: a LoRA adapter (float32) trains on top; full-parameter training is refused with the reason', async () => {
  const rt = new EmbeddedRuntime(STORIES, { weightsDtype: 'int8' });
  try {
    const ids = rt.tokenizer.encode('The cat sat on the mat. The cat was happy and the sun was warm.');
    const datum = { promptIds: ids.slice(0, 4), responseIds: ids.slice(4) };
    rt.configureTraining({ rank: 4, alpha: 8, seed: 1 });
    const before = rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss;
    for (let i = 0; i < 4; i++) { rt.forwardBackward([datum], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 3e-2 }); }
    const after = rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss;
    assert.ok(after < before - 0.1, `loss ${before} → ${after}`);
    assert.throws(() => rt.configureTraining(null), /full-parameter training needs float32 weights: load the model with --weights-dtype f32 \(LoRA trains on int8 weights\)/);
  } finally {
    await rt.close();
  }
});
