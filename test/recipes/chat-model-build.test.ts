// The chat-model recipe's pipeline on a tiny configuration: the real base model, the real engine and
// trainer, a few dozen conversations. The same seed must give byte-identical weights; the folder must
// load, render its template with tools, and stop generation at the end-of-turn token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildChatModel, readManifest, isCurrentBuild, RECIPE_VERSION, QUICK_RECIPE, type RecipeConfig } from '../../src/recipes/chat-model/build.ts';
import { KINDS, CALCULATOR_TOOL, type Mix } from '../../src/recipes/chat-model/data.ts';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { collect } from '../../src/engine/types.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const TINY: RecipeConfig = {
  pool: { ...QUICK_RECIPE.pool, free: 48, perTopic: 2, perName: 2, topicNames: 6, maxTokens: 60 },
  mix: Object.fromEntries(KINDS.map((k) => [k, 3])) as Mix,
  train: { ...QUICK_RECIPE.train, batchTokens: 2048 },
};

test('the recipe is deterministic: the same seed builds byte-identical weights, another seed different ones', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const a = await buildChatModel({ base: STORIES, out: join(dir, 'a'), seed: 3, recipe: TINY });
    const b = await buildChatModel({ base: STORIES, out: join(dir, 'b'), seed: 3, recipe: TINY });
    const c = await buildChatModel({ base: STORIES, out: join(dir, 'c'), seed: 4, recipe: TINY });
    assert.equal(a.weightsSha256, b.weightsSha256);
    assert.notEqual(a.weightsSha256, c.weightsSha256);
    assert.deepEqual(readFileSync(join(dir, 'a', 'train.jsonl')), readFileSync(join(dir, 'b', 'train.jsonl')));
    assert.equal(a.recipeVersion, RECIPE_VERSION);
    assert.ok(isCurrentBuild(join(dir, 'a')));
    assert.deepEqual(readManifest(join(dir, 'a'))?.heldOutPhrasings, a.heldOutPhrasings);
    assert.ok(a.heldOutPhrasings.topicRequests.length > 0);
    assert.equal(a.data.conversations, 3 * KINDS.length);
    assert.ok(!existsSync(join(dir, `.a.build-${process.pid}`)), 'the work folder is removed');
  } finally { cleanup(); }
});

test('a built model loads, renders its chat template with tools, and ends a turn at <|im_end|>', async () => {
  const { dir, cleanup } = tempDir();
  try {
    await buildChatModel({ base: STORIES, out: join(dir, 'm'), seed: 1, recipe: TINY });
    const engine = await EmbeddedEngine.load(join(dir, 'm'));
    try {
      assert.equal(engine.info.vocabSize, 520);
      const end = engine.tokenizer.encode('<|im_end|>', false);
      assert.equal(end.length, 1);
      assert.ok(engine.info.eosTokenIds.includes(end[0]));
      const text = engine.tokenizer.renderChat([{ role: 'user', content: 'What is 2 + 3?' }], { tools: [CALCULATOR_TOOL] });
      assert.equal(text, '<s><|im_start|>system\n# Tools\n- calculator(expression): Evaluate an arithmetic expression.\n'
        + 'To call a tool, answer <tool_call>{"name": name, "arguments": {…}}</tool_call>.<|im_end|>\n<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n');
      const r = await collect(engine.sample(engine.tokenizer.encodeChat([{ role: 'user', content: 'Tell me a story.' }]), { maxTokens: 400, temperature: 1, topP: 1, topK: 0, seed: 1 }));
      assert.ok(r.text.length > 0);
    } finally { await engine.close(); }
  } finally { cleanup(); }
});

test('a build finds and removes the work folder a killed build left behind, and keeps those of running builds', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const { mkdirSync } = await import('node:fs');
    const { staleWorkFolders } = await import('../../src/recipes/chat-model/build.ts');
    const dead = join(dir, '.m.build-999999999'), alive = join(dir, `.m.build-${process.ppid}`);
    mkdirSync(dead); mkdirSync(alive);
    assert.deepEqual(staleWorkFolders(join(dir, 'm')), [dead]);
  } finally { cleanup(); }
});
