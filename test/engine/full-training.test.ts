// Full-parameter training on the engine: it learns (stories260K), every weight kind moves while the
// base version stays as it was, non-finite steps are refused, full-weight versions hot-swap while
// requests run (a pass mixing versions gives each sequence its own weights), checkpoints resume
// exactly, and saveModel writes a folder that scores the same — also for a vocabulary larger than
// the tokenizer's and untied/biased (qwen2) or q/k-normed (qwen3) shapes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { paramRowMajor } from '../../src/engine/embedded/full-trainer.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import type { Datum, SampleParams } from '../../src/engine/types.ts';
import { STORIES, tempDir, tinyModel } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);
const mean = (xs: ArrayLike<number>) => Array.from(xs).reduce((a, b) => a + b, 0) / xs.length;

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  a.forEach((x, k) => x.forEach((v, t) => { m = Math.max(m, Math.abs(v - b[k][t])); }));
  return m;
}

test('full-parameter SFT on stories260K: one story learned within 30 steps; every tensor moved; the base version is unchanged', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  try {
    const prompt = rt.tokenizer.encode('Once upon a time');
    const story = rt.tokenizer.encode('Once upon a time, a purple cat sang to the moon every night.').slice(prompt.length);
    const d: Datum = { promptIds: prompt, responseIds: story };
    const before = mean(rt.score([d], { adapter: 'base' })[0]);
    rt.configureTraining(null);
    const tr = rt.fullTrainer!;
    // 512×64 embedding (also the LM head) + 5 layers × (2·64 norms + 64·64 q + 2·32·64 k,v + 64·64 o + 3·172·64 MLP) + 64 final norm
    assert.equal(tr.parameterCount, 512 * 64 + 5 * (2 * 64 + 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 172 * 64) + 64, 'every weight once');
    const start = tr.params.map(paramRowMajor);
    let loss = Infinity;
    for (let i = 0; i < 30 && loss > 0.25; i++) {
      loss = rt.forwardBackward([d], { kind: 'cross_entropy' }).loss;
      const s = rt.optimStep({ learningRate: 3e-3 });
      assert.equal(s.skipped, false);
    }
    assert.ok(loss < 0.25, `loss ${loss}`);
    assert.ok(-mean(rt.score([d], { adapter: 'current' })[0]) < 0.25);
    tr.params.forEach((p, i) => {
      const now = paramRowMajor(p);
      assert.ok(now.some((x, j) => x !== start[i][j]), `${p.parts[0][0]} was updated`);
    });
    assert.equal(mean(rt.score([d], { adapter: 'base' })[0]), before, 'version 0 (the base) serves unchanged weights');
  } finally {
    await rt.close();
  }
});

test('full-parameter: a step with a non-finite loss, or one the weights guard rejects, is refused; no weight changes; training goes on', async () => {
  const rt = new EmbeddedRuntime(STORIES, { kernel: 'ts' });
  try {
    rt.configureTraining(null);
    const snapshot = rt.fullTrainer!.params.map(paramRowMajor);
    rt.forwardBackward([{ promptIds: [1, 403], responseIds: [407, 261], behaviourLogprobs: [NaN, -1], advantages: [1, 1] }], { kind: 'ppo' });
    const step = rt.optimStep({ learningRate: 1e-2 });
    assert.equal(step.skipped, true);
    assert.match(step.reason!, /non-finite/);
    rt.fullTrainer!.params.forEach((p, i) => assert.deepEqual(paramRowMajor(p), snapshot[i]));
    // the weights guard: an update larger than the weights themselves is measured, refused, and never applied
    rt.forwardBackward([{ promptIds: [1, 403], responseIds: [407, 261] }], { kind: 'cross_entropy' });
    const huge = rt.optimStep({ learningRate: 50 });
    assert.equal(huge.skipped, true);
    assert.match(huge.reason!, /moved the weights by/);
    assert.equal(huge.step, 0);
    rt.fullTrainer!.params.forEach((p, i) => assert.deepEqual(paramRowMajor(p), snapshot[i]));
    rt.forwardBackward([{ promptIds: [1, 403], responseIds: [407, 261] }], { kind: 'cross_entropy' });
    assert.equal(rt.optimStep({ learningRate: 1e-2 }).skipped, false);
  } finally {
    await rt.close();
  }
});

test('full-parameter hot swap: publishing v+1 mid-generation leaves the running request on v (same tokens as alone), the next uses v+1, v is freed after', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  try {
    rt.configureTraining(null);
    const prompt = rt.tokenizer.encode('Once upon a time');
    const long: SampleParams = { maxTokens: 80, temperature: 1, topP: 1, topK: 0, seed: 42, ignoreEos: true };
    const story = rt.tokenizer.encode('Once upon a time, the dog ate a red apple.').slice(prompt.length);
    const train = () => { for (let i = 0; i < 3; i++) { rt.forwardBackward([{ promptIds: prompt, responseIds: story }], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 3e-3 }); } };
    train();
    const v1 = rt.saveWeights();
    rt.publish(v1);
    const reference = rt.generate(prompt, long);
    assert.equal(reference.policyVersion, v1);
    const key = rt.add(prompt, long);
    const ids: number[] = [];
    let result = null, swapped = false, next = -1, nextResult = null;
    const nextParams = { ...long, maxTokens: 20 };
    while (!result || !nextResult) {
      for (const o of rt.step()) {
        if (o.key === key && o.token) ids.push(o.token.id);
        if (o.key === key && o.result) result = o.result;
        if (o.key === next && o.result) nextResult = o.result;
      }
      if (!swapped && ids.length === 20) {
        train();
        const v2 = rt.saveWeights();
        rt.publish(v2);
        swapped = true;
        assert.deepEqual(rt.liveVersions, [0, v1, v2], 'v1 is kept while the long request uses it');
        next = rt.add(prompt, nextParams); // decodes in the same passes as the v1 request
      }
    }
    assert.deepEqual(ids, reference.ids, 'the running generation continued on its own weights while sharing passes with v2');
    assert.equal(result.policyVersion, v1);
    assert.equal(nextResult!.policyVersion, v1 + 1);
    assert.deepEqual(nextResult!.ids, rt.generate(prompt, nextParams).ids, 'the v2 request, sharing passes with v1, sampled what v2 samples alone');
    assert.deepEqual(rt.liveVersions, [0, v1 + 1], 'v1 was freed once no request used it');
  } finally {
    await rt.close();
  }
});

test('full-parameter checkpoint: saveTrainingState → loadTrainingState in a fresh engine continues exactly; the checkpoint is itself a model folder', async () => {
  const data: Datum[] = [{ promptIds: [1, 403, 407], responseIds: [261, 300, 310, 2] }, { promptIds: [1, 50], responseIds: [60, 70, 80] }];
  const steps = (rt: EmbeddedRuntime, n: number) => { for (let i = 0; i < n; i++) { rt.forwardBackward(data, { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 2e-3 }); } };
  const ckpt = join(tmp.dir, 'full-ckpt');
  const a = new EmbeddedRuntime(STORIES);
  const b = new EmbeddedRuntime(STORIES);
  try {
    a.configureTraining(null);
    steps(a, 3);
    a.saveTrainingState(ckpt);
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'optimizer.safetensors', 'trainer_state.json']) assert.ok(existsSync(join(ckpt, f)), f);
    steps(a, 2);
    const v = b.loadTrainingState(ckpt);
    assert.equal(b.optimizerStep, 3);
    steps(b, 2);
    assert.equal(b.optimizerStep, 5);
    const sa = a.score(data, { adapter: 'current' }), sb = b.score(data, { adapter: 'current' });
    assert.ok(maxDiff(sa, sb) < 1e-6, `resumed training matches: ${maxDiff(sa, sb)}`);
    assert.ok(maxDiff(b.score(data, { adapter: v }), sb) > 1e-3, 'the loaded version is the checkpoint, not the weights trained since');
    const asModel = new EmbeddedRuntime(ckpt);
    try {
      assert.ok(maxDiff(asModel.score(data), b.score(data, { adapter: v })) < 1e-6);
    } finally {
      await asModel.close();
    }
    assert.throws(() => b.saveAdapter(join(tmp.dir, 'x'), 'current'), /full-parameter training and have no adapter: write them with saveModel/);
  } finally {
    await a.close(); await b.close();
  }
});

const SHAPES = {
  'qwen2 (untied, biases)': tinyConfig('qwen2'),
  'qwen3 (tied, q/k norms)': tinyConfig('qwen3', { head_dim: 16 }),
  'llama with a vocabulary grown past the tokenizer (640 > 512, tied)': tinyConfig('llama', { vocab_size: 640 }),
};
for (const [name, raw] of Object.entries(SHAPES)) {
  test(`full-parameter training and saveModel, ${name}: the folder written loads and scores like the trained weights`, async () => {
    const src = tinyModel(join(tmp.dir, name.replace(/\W+/g, '-')), raw);
    const rt = new EmbeddedRuntime(src);
    try {
      rt.configureTraining(null);
      const data: Datum[] = [{ promptIds: [1, 20, 30], responseIds: [40, 50, 60, 2] }, { promptIds: [1, 9], responseIds: [11, 12] }];
      const before = rt.score(data, { adapter: 'current' });
      for (let i = 0; i < 5; i++) { rt.forwardBackward(data, { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 1e-2 }); }
      const after_ = rt.score(data, { adapter: 'current' });
      assert.ok(mean(after_.flatMap((x) => Array.from(x))) > mean(before.flatMap((x) => Array.from(x))) + 0.1, 'the log-likelihood rose');
      const out = join(tmp.dir, `${name.replace(/\W+/g, '-')}-out`);
      rt.saveModel(out, 'current');
      const back = new EmbeddedRuntime(out);
      try {
        assert.equal(back.info.vocabSize, raw.vocab_size);
        assert.ok(maxDiff(back.score(data), after_) < 1e-5);
      } finally {
        await back.close();
      }
    } finally {
      await rt.close();
    }
  });
}
