// The SFT learning-rate schedule, as a table: warm-up, constant and cosine values at chosen steps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { learningRateAt } from '../../src/trainer/sft.ts';

test('learningRateAt gives the warm-up, constant and cosine values of the table', () => {
  // [step, totalSteps, peak, schedule, warmupSteps, minRatio, expected]
  const rows: [number, number, number, 'constant' | 'cosine', number, number, number][] = [
    [0, 100, 1e-3, 'constant', 0, 0.1, 1e-3],
    [99, 100, 1e-3, 'constant', 0, 0.1, 1e-3],
    [0, 100, 1e-3, 'constant', 10, 0.1, 1e-4], // first warm-up step already moves the weights
    [4, 100, 1e-3, 'constant', 10, 0.1, 5e-4],
    [10, 100, 1e-3, 'constant', 10, 0.1, 1e-3],
    [0, 101, 2e-3, 'cosine', 0, 0.1, 2e-3], // cosine starts at the peak
    [50, 101, 2e-3, 'cosine', 0, 0.1, 2e-3 * (0.1 + 0.9 * 0.5)], // halfway: the mean of peak and floor
    [100, 101, 2e-3, 'cosine', 0, 0.1, 2e-4], // the last step sits on the floor
    [100, 101, 2e-3, 'cosine', 0, 0, 0],
    [10, 111, 1e-3, 'cosine', 10, 0.2, 1e-3], // after warm-up the cosine begins at the peak
    [60, 111, 1e-3, 'cosine', 10, 0.2, 1e-3 * (0.2 + 0.8 * 0.5)],
    [110, 111, 1e-3, 'cosine', 10, 0.2, 2e-4],
    [200, 111, 1e-3, 'cosine', 10, 0.2, 2e-4], // past the end (a resumed run with more epochs) stays on the floor
  ];
  for (const [step, total, peak, schedule, warm, minRatio, expected] of rows) {
    const got = learningRateAt(step, total, peak, schedule, warm, minRatio);
    assert.ok(Math.abs(got - expected) < 1e-12, `step ${step}/${total} ${schedule} warm ${warm}: ${got} ≠ ${expected}`);
  }
});

test('learningRateAt never exceeds the peak and never goes negative over a whole run', () => {
  for (const schedule of ['constant', 'cosine'] as const) {
    for (let s = 0; s < 300; s++) {
      const lr = learningRateAt(s, 300, 3e-3, schedule, 20, 0.1);
      assert.ok(lr > 0 && lr <= 3e-3 + 1e-15, `${schedule} step ${s}: ${lr}`);
    }
  }
});
