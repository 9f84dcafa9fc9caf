// Merging multi-turn samples (src/learn/continuations.ts): which data merge, what the merged datum
// holds, and that training on it is the same as training on the turns apart (real stories260K weights).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mergeContinuations } from '../../src/learn/continuations.ts';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import type { Datum } from '../../src/engine/types.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);

const d = (promptIds: number[], responseIds: number[], extra: Partial<Datum> = {}): Datum => ({
  promptIds, responseIds, advantages: responseIds.map(() => 0.5), behaviourLogprobs: responseIds.map(() => -1), temperature: 1, ...extra,
});

test('mergeContinuations: which data merge', () => {
  const cases: { name: string; data: Datum[]; merged: number; lengths: number[] }[] = [
    { name: 'a turn continuing another (observation 9, 9 between)', data: [d([1, 2], [3, 4]), d([1, 2, 3, 4, 9, 9], [5])], merged: 1, lengths: [5] },
    { name: 'no observation between', data: [d([1, 2], [3]), d([1, 2, 3], [4])], merged: 1, lengths: [2] },
    { name: 'three turns of one episode fold into one', data: [d([1], [2]), d([1, 2, 7], [3]), d([1, 2, 7, 3, 8], [4])], merged: 2, lengths: [5] },
    { name: 'same prompt, different episodes: apart', data: [d([1, 2], [3]), d([1, 2], [4])], merged: 0, lengths: [1, 1] },
    { name: 'prompt differs inside the earlier response: apart', data: [d([1, 2], [3]), d([1, 2, 4, 9], [5])], merged: 0, lengths: [1, 1] },
    { name: 'a later turn before its first (order kept, no merge backwards)', data: [d([1, 2, 3, 9], [5]), d([1, 2], [3])], merged: 0, lengths: [1, 1] },
    { name: 'other temperature: apart', data: [d([1], [2]), d([1, 2, 9], [3], { temperature: 0.7 })], merged: 0, lengths: [1, 1] },
    { name: 'a datum with a distillation set: apart', data: [d([1], [2]), d([1, 2, 9], [3], { distill: { ids: [[3]], oldLogprobs: [[-1]], advantages: [[0]] } })], merged: 0, lengths: [1, 1] },
    { name: 'a datum with teacher log-probs: apart', data: [d([1], [2], { teacherLogprobs: [-1] }), d([1, 2, 9], [3])], merged: 0, lengths: [1, 1] },
    { name: 'two episodes interleaved', data: [d([1], [2]), d([5], [6]), d([5, 6, 9], [7]), d([1, 2, 9], [3])], merged: 2, lengths: [3, 3] },
  ];
  for (const c of cases) {
    const r = mergeContinuations(c.data);
    assert.equal(r.merged, c.merged, c.name);
    assert.deepEqual(r.data.map((x) => x.responseIds.length), c.lengths, c.name);
  }
});

test('mergeContinuations: the merged datum carries each turn\'s tokens, and masks the observation out of the loss', () => {
  const a = d([1, 2], [3, 4], { advantages: [1, 2], behaviourLogprobs: [-0.1, -0.2], lossMask: [1, 0] });
  const b = d([1, 2, 3, 4, 8, 9], [5, 6], { advantages: [3, 4], behaviourLogprobs: [-0.3, -0.4] });
  const [m] = mergeContinuations([a, b]).data;
  assert.deepEqual(m, {
    promptIds: [1, 2], responseIds: [3, 4, 8, 9, 5, 6], advantages: [1, 2, 0, 0, 3, 4], behaviourLogprobs: [-0.1, -0.2, 0, 0, -0.3, -0.4],
    lossMask: [1, 0, 0, 0, 1, 1], temperature: 1,
  });
});

test('training on merged turns is training on the turns apart: same loss, tokens and gradient (stories260K)', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  try {
    const tok = rt.tokenizer;
    const p1 = tok.encode('Once upon a time, there was a little dog.');
    const r1 = tok.encode(' He liked to run');
    const obs = tok.encode(' in the park. One day');
    const r2 = tok.encode(' he found a big red ball.');
    const q1 = tok.encode('Lily had a cat.');
    const s1 = tok.encode(' The cat was soft');
    const turns: Datum[] = [
      { promptIds: p1, responseIds: r1, advantages: r1.map(() => 0.7), behaviourLogprobs: r1.map(() => -2), temperature: 1 },
      { promptIds: q1, responseIds: s1, advantages: s1.map(() => -0.4), behaviourLogprobs: s1.map(() => -2.5), temperature: 1 },
      { promptIds: [...p1, ...r1, ...obs], responseIds: r2, advantages: r2.map(() => 0.7), behaviourLogprobs: r2.map(() => -1.5), temperature: 1 },
    ];
    const { data: merged, merged: n } = mergeContinuations(turns);
    assert.equal(n, 1);
    const spec = { kind: 'ppo' as const, clipLow: 0.2, clipHigh: 0.28, klCoef: 0.3 };
    rt.configureTraining({ rank: 8, alpha: 16, seed: 3 });
    const apart = rt.forwardBackward(turns, spec);
    rt.configureTraining({ rank: 8, alpha: 16, seed: 3 });
    const together = rt.forwardBackward(merged, spec);
    assert.equal(together.tokens, apart.tokens);
    assert.ok(Math.abs(together.loss - apart.loss) < 1e-5, `loss ${together.loss} vs ${apart.loss}`);
    assert.ok(Math.abs(together.kl! - apart.kl!) < 1e-5, `KL ${together.kl} vs ${apart.kl}`);
    assert.ok(Math.abs(together.gradNorm - apart.gradNorm) < 1e-4 * Math.max(1, apart.gradNorm), `gradient norm ${together.gradNorm} vs ${apart.gradNorm}`);
    assert.ok(apart.gradNorm > 0);
  } finally {
    await rt.close();
  }
});
