// Training through the worker-backed engine while it serves: jobs interleave with sampling,
// publishing swaps versions between requests, and no request fails.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { collect, type SampleParams, type SampleResult } from '../../src/engine/types.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);

test('train and publish on the engine thread while clients stream: no request fails, versions only move forward', async () => {
  const engine = await EmbeddedEngine.load(STORIES);
  try {
    await assert.rejects(engine.forwardBackward([{ promptIds: [1], responseIds: [2] }], { kind: 'cross_entropy' }), /training is not configured/);
    await engine.configureTraining({ rank: 8, alpha: 16, seed: 1 });
    const prompt = engine.tokenizer.encode('Once upon a time');
    const story = engine.tokenizer.encode('Once upon a time, a purple whale sang songs to the moon.').slice(prompt.length);
    const params: SampleParams = { maxTokens: 40, temperature: 1, topP: 1, topK: 0, ignoreEos: true };

    // a client that keeps streaming one request after another until told to stop
    let stop = false;
    const served: SampleResult[] = [];
    const client = (async () => {
      while (!stop) served.push(await collect(engine.sample(prompt, { ...params, seed: served.length })));
    })();

    const published: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 3; i++) {
        const m = await engine.forwardBackward([{ promptIds: prompt, responseIds: story }], { kind: 'cross_entropy' });
        assert.ok(Number.isFinite(m.loss) && m.tokens === story.length);
        const s = await engine.optimStep({ learningRate: 1e-2 });
        assert.equal(s.skipped, false);
      }
      const v = await engine.saveWeights();
      await engine.publish(v);
      published.push(v);
      await new Promise((r) => setTimeout(r, 20));
    }
    stop = true;
    await client;
    assert.deepEqual(published, [1, 2, 3]);
    assert.ok(served.length >= 3, `only ${served.length} requests were served during training`);
    const versions = served.map((r) => r.policyVersion);
    for (let i = 1; i < versions.length; i++) assert.ok(versions[i] >= versions[i - 1], `versions went backwards: ${versions}`);
    const after = await collect(engine.sample(prompt, { ...params, seed: 99 }));
    assert.equal(after.policyVersion, 3);
    const status = await engine.versions();
    assert.equal(status.published, 3);
    assert.deepEqual(status.live, [0, 3]);
    assert.equal(status.optimizerStep, 9);
    // the trained behaviour is what is served: the story became likely under the published version
    const [lp] = await engine.score([{ promptIds: prompt, responseIds: story }]);
    const [lpBase] = await engine.score([{ promptIds: prompt, responseIds: story }], { adapter: 'base' });
    assert.ok(lp.reduce((a, b) => a + b, 0) > lpBase.reduce((a, b) => a + b, 0) + 5);
    // PEFT files from the engine
    const dir = join(tmp.dir, 'v3');
    await engine.saveAdapter(dir);
    const loaded = await engine.loadAdapter(dir);
    const [lpLoaded] = await engine.score([{ promptIds: prompt, responseIds: story }], { adapter: loaded });
    assert.deepEqual(Array.from(lpLoaded), Array.from(lp));
    await assert.rejects(engine.publish(42), /weights version 42 does not exist/);
    await assert.rejects(engine.loadAdapter(join(tmp.dir, 'missing')), /adapter_config\.json not found/);
  } finally {
    await engine.close();
  }
});
