// saveModel: the selected weights written as a Hugging Face folder that loads back and scores the
// same, for each architecture's weight kinds (tied and untied embeddings, qwen2 biases, qwen3 q/k norms).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import { ChatTokenizer } from '../../src/engine/embedded/tokenizer.ts';
import { HF_TOKENIZER_CLASS, exportedTokenizerConfig } from '../../src/engine/embedded/hf-export.ts';
import { tempDir, tinyModel } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);

const ARCHS = { llama: tinyConfig('llama'), qwen2: tinyConfig('qwen2'), qwen3: tinyConfig('qwen3', { head_dim: 16 }) };

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  a.forEach((x, k) => x.forEach((v, t) => { m = Math.max(m, Math.abs(v - b[k][t])); }));
  return m;
}

for (const [name, raw] of Object.entries(ARCHS)) {
  test(`saveModel (${name}): the base and a trained LoRA version, merged, load back and score the same`, async () => {
    const src = tinyModel(join(tmp.dir, `${name}-src`), raw);
    writeFileSync(join(src, 'generation_config.json'), JSON.stringify({ eos_token_id: [2] }));
    const engine = await EmbeddedEngine.load(src, { threads: 1 });
    try {
      await engine.configureTraining({ rank: 4, alpha: 8, seed: 3 });
      const data = [{ promptIds: [1, 20, 30, 40], responseIds: [50, 60, 70, 80, 2] }, { promptIds: [1, 9], responseIds: [11, 12, 13] }];
      for (let i = 0; i < 4; i++) {
        await engine.forwardBackward(data, { kind: 'cross_entropy' });
        await engine.optimStep({ learningRate: 1e-2 });
      }
      const version = await engine.saveWeights();
      const requests = data.map((d) => ({ promptIds: d.promptIds, responseIds: d.responseIds }));
      const trained = await engine.score(requests, { adapter: version });
      const base = await engine.score(requests, { adapter: 'base' });
      assert.ok(maxDiff(trained, base) > 1e-2, 'training changed the scores');

      const out = join(tmp.dir, `${name}-merged`);
      await engine.saveModel(out, version);
      const files = readdirSync(out).sort();
      for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) assert.ok(files.includes(f), f);
      assert.ok(!files.some((f) => f.startsWith('.')));
      const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
      assert.equal(config.model_type, raw.model_type);
      assert.equal(config.torch_dtype, 'float32');
      const reloaded = await EmbeddedEngine.load(out, { threads: 1 });
      try {
        assert.ok(maxDiff(await reloaded.score(requests), trained) < 1e-4);
      } finally {
        await reloaded.close();
      }
      // the base, written over the same folder (replaced whole), scores exactly as the base
      await engine.saveModel(out, 'base');
      const again = await EmbeddedEngine.load(out, { threads: 1 });
      try {
        assert.ok(maxDiff(await again.score(requests), base) < 1e-6);
      } finally {
        await again.close();
      }
      await assert.rejects(engine.saveModel(join(tmp.dir, 'x'), 77), /version 77 does not exist/);
    } finally {
      await engine.close();
    }
  });
}

test('saveModel writes tokenizer_config.json with the generic tokenizer class, the rest as the source has it', async () => {
  // transformers 5 rebuilds LlamaTokenizer's own pipeline and ignores tokenizer.json's normalizer
  // (stories260K's trims and collapses spaces); the generic class keeps the ids the engine trained on
  const src = tinyModel(join(tmp.dir, 'tokcls-src'), ARCHS.llama);
  const source = JSON.parse(readFileSync(join(src, 'tokenizer_config.json'), 'utf8'));
  assert.equal(source.tokenizer_class, 'LlamaTokenizer', 'the fixture declares the model-specific class');
  const engine = await EmbeddedEngine.load(src, { threads: 1 });
  const out = join(tmp.dir, 'tokcls-out');
  try {
    await engine.saveModel(out, 'base');
  } finally {
    await engine.close();
  }
  const written = JSON.parse(readFileSync(join(out, 'tokenizer_config.json'), 'utf8'));
  assert.equal(written.tokenizer_class, HF_TOKENIZER_CLASS);
  assert.deepEqual({ ...written, tokenizer_class: source.tokenizer_class }, source);
  const before = ChatTokenizer.load(src), after = ChatTokenizer.load(out);
  for (const text of ['Hello ', '  two  spaces  ', 'Once upon a time']) assert.deepEqual(after.encode(text), before.encode(text), text);

  // a source without tokenizer_config.json still gets one naming the class
  rmSync(join(src, 'tokenizer_config.json'));
  assert.deepEqual(exportedTokenizerConfig(src), { tokenizer_class: HF_TOKENIZER_CLASS });
});
