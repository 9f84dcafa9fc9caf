// LoRA training on the real stories260K weights: it learns, it aggregates tokens as documented,
// it refuses non-finite steps, versions hot-swap without disturbing running requests, and adapters
// round-trip through the PEFT format.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { readHeader } from '../../src/engine/embedded/safetensors.ts';
import type { Datum, SampleParams } from '../../src/engine/types.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);
const mean = (xs: ArrayLike<number>) => Array.from(xs).reduce((a, b) => a + b, 0) / xs.length;
const sampling: SampleParams = { maxTokens: 24, temperature: 1, topP: 1, topK: 0, ignoreEos: true };

test('SFT: cross-entropy on one short story drives its loss below 0.25 nats/token within 40 steps', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  try {
    rt.configureTraining({ rank: 8, alpha: 16, seed: 1 });
    const tok = rt.tokenizer;
    const prompt = tok.encode('Once upon a time');
    const story = tok.encode('Once upon a time, a purple whale sang songs to the moon every night.').slice(prompt.length);
    const datum: Datum = { promptIds: prompt, responseIds: story };
    const first = rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss;
    rt.optimStep({ learningRate: 5e-3 });
    let loss = first, steps = 1;
    while (loss > 0.25 && steps < 40) {
      loss = rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss;
      rt.optimStep({ learningRate: 5e-3 });
      steps++;
    }
    console.log(`# SFT: loss ${first.toFixed(3)} → ${loss.toFixed(3)} nats/token in ${steps} steps`);
    assert.ok(first > 1, `the story should start out unlikely (${first})`);
    assert.ok(loss < 0.25, `loss still ${loss} after ${steps} steps`);
  } finally {
    await rt.close();
  }
});

test('policy gradient: one PPO step with advantage +1 on one response and −1 on another raises the first and lowers the second', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  try {
    rt.configureTraining({ rank: 8, alpha: 16, seed: 2 });
    const prompt = rt.tokenizer.encode('Once upon a time');
    const good = rt.generate(prompt, { ...sampling, seed: 1 });
    const bad = rt.generate(prompt, { ...sampling, seed: 2 });
    assert.notDeepEqual(good.ids, bad.ids);
    const datum = (r: typeof good, a: number): Datum => ({ promptIds: prompt, responseIds: r.ids, behaviourLogprobs: r.logprobs, advantages: r.ids.map(() => a) });
    const before = rt.score([{ promptIds: prompt, responseIds: good.ids }, { promptIds: prompt, responseIds: bad.ids }], { adapter: 'current' });
    const m = rt.forwardBackward([datum(good, 1), datum(bad, -1)], { kind: 'ppo' });
    // fresh adapter (B = 0) = the sampling policy: every ratio is 1 and nothing is clipped
    assert.ok(Math.abs(m.meanRatio - 1) < 1e-4);
    assert.equal(m.clipFraction, 0);
    assert.equal(m.tokens, good.ids.length + bad.ids.length);
    const step = rt.optimStep({ learningRate: 1e-2 });
    assert.equal(step.skipped, false);
    assert.ok(step.gradNorm > 0);
    const afterStep = rt.score([{ promptIds: prompt, responseIds: good.ids }, { promptIds: prompt, responseIds: bad.ids }], { adapter: 'current' });
    console.log(`# mean log-prob: +1 response ${mean(before[0]).toFixed(4)} → ${mean(afterStep[0]).toFixed(4)}, −1 response ${mean(before[1]).toFixed(4)} → ${mean(afterStep[1]).toFixed(4)}`);
    assert.ok(mean(afterStep[0]) > mean(before[0]));
    assert.ok(mean(afterStep[1]) < mean(before[1]));
    // the published weights (base, version 0) did not move
    const published = rt.score([{ promptIds: prompt, responseIds: good.ids }]);
    assert.deepEqual(Array.from(published[0]), Array.from(before[0]));
  } finally {
    await rt.close();
  }
});

test('token-level aggregation: gradients sum over calls and the step divides by all unmasked tokens; masked tokens contribute nothing', async () => {
  const make = () => { const rt = new EmbeddedRuntime(STORIES, { kernel: 'ts' }); rt.configureTraining({ rank: 4, alpha: 8, seed: 3, targets: ['q_proj', 'v_proj', 'down_proj'] }); return rt; };
  const [a, b, c] = [make(), make(), make()];
  try {
    // give B non-zero values so every parameter gets a gradient
    for (const rt of [a, b, c]) for (const t of rt.trainer!.adapter.tensors()) if (t.which === 'B') t.data.fill(0.01);
    const d1: Datum = { promptIds: [1, 403, 407], responseIds: [261, 378, 432] };
    const d2: Datum = { promptIds: [1, 403], responseIds: [407, 261, 378, 432, 383] };
    const d2masked: Datum = { ...d2, lossMask: [0, 0, 0, 0, 0] };
    a.forwardBackward([d1], { kind: 'cross_entropy' });
    a.forwardBackward([d2], { kind: 'cross_entropy' });
    const mb = b.forwardBackward([d1, d2], { kind: 'cross_entropy' });
    assert.equal(mb.tokens, 8);
    const mc = c.forwardBackward([d1, d2masked], { kind: 'cross_entropy' });
    assert.equal(mc.tokens, 3);
    const ga = [...a.trainer!.grads.tensors()], gb = [...b.trainer!.grads.tensors()];
    const c1 = make();
    for (const t of c1.trainer!.adapter.tensors()) if (t.which === 'B') t.data.fill(0.01);
    c1.forwardBackward([d1], { kind: 'cross_entropy' });
    const gc = [...c.trainer!.grads.tensors()], gc1 = [...c1.trainer!.grads.tensors()];
    for (let i = 0; i < ga.length; i++) for (let j = 0; j < ga[i].data.length; j++) {
      assert.ok(Math.abs(ga[i].data[j] - gb[i].data[j]) < 1e-5, 'two calls accumulate to what one call gives');
      assert.ok(Math.abs(gc[i].data[j] - gc1[i].data[j]) < 1e-5, 'a fully masked datum adds no gradient');
    }
    assert.equal(a.trainer!.pendingTokens, 8);
    const sa = a.optimStep({ learningRate: 1e-3, gradClipNorm: 0 }), sb = b.optimStep({ learningRate: 1e-3, gradClipNorm: 0 });
    assert.equal(sa.tokens, 8);
    assert.ok(Math.abs(sa.gradNorm - sb.gradNorm) < 1e-6 * sb.gradNorm);
    await c1.close();
  } finally {
    for (const rt of [a, b, c]) await rt.close();
  }
});

test('a step with non-finite loss is refused and reported; the adapter is unchanged and training goes on', async () => {
  const rt = new EmbeddedRuntime(STORIES, { kernel: 'ts' });
  try {
    rt.configureTraining({ rank: 4, alpha: 8, seed: 4 });
    const snapshot = [...rt.trainer!.adapter.tensors()].map((t) => Float32Array.from(t.data));
    const bad: Datum = { promptIds: [1, 403], responseIds: [407, 261], behaviourLogprobs: [NaN, -1], advantages: [1, 1] };
    rt.forwardBackward([bad], { kind: 'ppo' });
    const step = rt.optimStep({ learningRate: 1e-2 });
    assert.equal(step.skipped, true);
    assert.match(step.reason!, /non-finite/);
    [...rt.trainer!.adapter.tensors()].forEach((t, i) => assert.deepEqual(Array.from(t.data), Array.from(snapshot[i])));
    rt.forwardBackward([{ promptIds: [1, 403], responseIds: [407, 261] }], { kind: 'cross_entropy' });
    const ok = rt.optimStep({ learningRate: 1e-2 });
    assert.equal(ok.skipped, false);
  } finally {
    await rt.close();
  }
});

test('hot swap: publishing v+1 during a long generation leaves it on v; the next request uses v+1; v is freed after', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  try {
    rt.configureTraining({ rank: 8, alpha: 16, seed: 5 });
    const prompt = rt.tokenizer.encode('Once upon a time');
    const long: SampleParams = { maxTokens: 120, temperature: 1, topP: 1, topK: 0, seed: 42, ignoreEos: true };
    // train v1 so that it samples differently, publish it, and make it the version in use
    const story = rt.tokenizer.encode('Once upon a time, the dog ate a red apple.').slice(prompt.length);
    for (let i = 0; i < 5; i++) { rt.forwardBackward([{ promptIds: prompt, responseIds: story }], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 1e-2 }); }
    const v1 = rt.saveWeights();
    rt.publish(v1);
    const reference = rt.generate(prompt, long); // what v1 produces for this seed, undisturbed
    assert.equal(reference.policyVersion, v1);

    const key = rt.add(prompt, long);
    const ids: number[] = [];
    let result = null, swapped = false, next = -1, nextResult = null;
    while (!result || !nextResult) {
      for (const o of rt.step()) {
        if (o.key === key && o.token) ids.push(o.token.id);
        if (o.key === key && o.result) result = o.result;
        if (o.key === next && o.result) nextResult = o.result;
      }
      if (!swapped && ids.length === 30) {
        for (let i = 0; i < 5; i++) { rt.forwardBackward([{ promptIds: prompt, responseIds: story }], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 1e-2 }); }
        const v2 = rt.saveWeights();
        rt.publish(v2);
        swapped = true;
        assert.deepEqual(rt.liveVersions, [0, v1, v2], 'v1 is kept while the long request uses it');
        next = rt.add(prompt, { ...long, maxTokens: 5 });
      }
    }
    assert.deepEqual(ids, reference.ids, 'the running generation continued on its version');
    assert.equal(result.policyVersion, v1);
    assert.equal(nextResult!.policyVersion, v1 + 1);
    assert.deepEqual(rt.liveVersions, [0, v1 + 1], 'v1 was freed once no request used it');
  } finally {
    await rt.close();
  }
});

test('PEFT format: names and shapes follow PEFT; save → load gives identical log-probs; the training checkpoint resumes exactly', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  const rt2 = new EmbeddedRuntime(STORIES);
  try {
    rt.configureTraining({ rank: 4, alpha: 8, seed: 6 });
    const prompt = [1, 403, 407, 261];
    const datum: Datum = { promptIds: prompt, responseIds: [378, 432, 383, 286] };
    for (let i = 0; i < 3; i++) { rt.forwardBackward([datum], { kind: 'cross_entropy' }); rt.optimStep({ learningRate: 1e-2 }); }
    const v = rt.saveWeights();
    const dir = join(tmp.dir, 'adapter');
    rt.saveAdapter(dir, v);
    assert.deepEqual(readdirSync(dir).sort(), ['adapter_config.json', 'adapter_model.safetensors']);
    const cfg = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    assert.equal(cfg.peft_type, 'LORA');
    assert.equal(cfg.r, 4);
    assert.equal(cfg.lora_alpha, 8);
    assert.deepEqual(cfg.target_modules, ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
    const tensors = new Map(readHeader(join(dir, 'adapter_model.safetensors')).tensors.map((t) => [t.name, t.shape]));
    assert.equal(tensors.size, 5 * 7 * 2);
    assert.deepEqual(tensors.get('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'), [4, 64]);
    assert.deepEqual(tensors.get('base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight'), [64, 4]);
    assert.deepEqual(tensors.get('base_model.model.model.layers.4.self_attn.k_proj.lora_B.weight'), [32, 4]);
    assert.deepEqual(tensors.get('base_model.model.model.layers.2.mlp.down_proj.lora_A.weight'), [4, 172]);
    assert.deepEqual(tensors.get('base_model.model.model.layers.2.mlp.gate_proj.lora_B.weight'), [172, 4]);

    const loaded = rt2.loadAdapter(dir);
    const req = [{ promptIds: prompt, responseIds: datum.responseIds }];
    assert.deepEqual(Array.from(rt2.score(req, { adapter: loaded })[0]), Array.from(rt.score(req, { adapter: v })[0]));
    assert.notDeepEqual(Array.from(rt2.score(req, { adapter: 'base' })[0]), Array.from(rt2.score(req, { adapter: loaded })[0]));

    // checkpoint with optimizer state → identical continuation
    const ckpt = join(tmp.dir, 'ckpt');
    rt.saveTrainingState(ckpt);
    rt2.loadTrainingState(ckpt);
    for (const r of [rt, rt2]) { r.forwardBackward([datum], { kind: 'cross_entropy' }); r.optimStep({ learningRate: 1e-2 }); }
    const a = [...rt.trainer!.adapter.tensors()], b = [...rt2.trainer!.adapter.tensors()];
    a.forEach((t, i) => assert.deepEqual(Array.from(t.data), Array.from(b[i].data)));
    assert.equal(rt2.trainer!.optimizer.step, 4);
  } finally {
    await rt.close(); await rt2.close();
  }
});

test('rolling back by loading a checkpoint, again and again, holds the arena\'s memory flat (the replaced trainer\'s adapter is freed)', async () => {
  const rt = new EmbeddedRuntime(STORIES);
  const tmp = tempDir('ocrl-rollback-');
  try {
    rt.configureTraining({ rank: 4, alpha: 8, seed: 6 });
    const ckpt = join(tmp.dir, 'ckpt');
    rt.saveTrainingState(ckpt);
    const live: number[] = [];
    for (let i = 0; i < 6; i++) {
      // what the trainer loop does when the weights guard refuses a step: snapshot, then load the last checkpoint
      rt.saveWeights();
      rt.publish(rt.loadTrainingState(ckpt));
      live.push(rt.stats().arenaUsedBytes);
    }
    for (let i = 0; i < 4; i++) { rt.configureTraining({ rank: 4, alpha: 8, seed: i }); live.push(rt.stats().arenaUsedBytes); }
    assert.ok(live.slice(1, 6).every((b) => b === live[0]), `arena bytes after each rollback: ${live.slice(0, 6).join(', ')}`);
    assert.ok(live.slice(6).every((b) => b === live[6]), `arena bytes after each fresh adapter: ${live.slice(6).join(', ')}`);
  } finally {
    await rt.close();
    tmp.cleanup();
  }
});
