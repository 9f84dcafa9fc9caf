// The reference half of the PEFT compatibility check: trains a LoRA adapter on the embedded engine
// for a few PPO steps (so both A and B are non-zero), writes it as a PEFT folder, and writes the
// engine's per-token log-probs of fixed sequences under base and adapted weights.
// scripts/peft-compat.py then loads the same adapter in transformers + peft and compares.
//
//   node scripts/peft-compat.ts --model DIR --out OUTDIR [--rank 8] [--steps 3]
import { parseArgs } from 'node:util';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EmbeddedEngine } from '../src/engine/embedded/engine.ts';
import { collect } from '../src/engine/types.ts';

const { values } = parseArgs({ options: { model: { type: 'string' }, out: { type: 'string' }, rank: { type: 'string', default: '8' }, steps: { type: 'string', default: '3' } } });
if (!values.model || !values.out) {
  process.stderr.write('usage: node scripts/peft-compat.ts --model DIR --out OUTDIR [--rank 8] [--steps 3]\n');
  process.exit(2);
}
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const engine = await EmbeddedEngine.load(values.model);
try {
  await engine.configureTraining({ rank: Number(values.rank), alpha: 2 * Number(values.rank), seed: 1 });
  const prompts = ['Once upon a time', 'The little dog', 'One day, Lily went to the park'];
  const samples = await Promise.all(prompts.map((p, i) => collect(engine.sample(engine.tokenizer.encode(p), { maxTokens: 24, temperature: 1, topP: 1, topK: 0, seed: i }))));
  const data = prompts.map((p, i) => ({ promptIds: engine.tokenizer.encode(p), responseIds: samples[i].ids, advantages: samples[i].ids.map((_, t) => (t % 2 ? 1 : -0.5)), behaviourLogprobs: samples[i].logprobs }));
  for (let s = 0; s < Number(values.steps); s++) {
    await engine.forwardBackward(data, { kind: 'ppo' });
    await engine.optimStep({ learningRate: 5e-3 });
  }
  const v = await engine.saveWeights();
  await engine.saveAdapter(join(out, 'adapter'), v);
  const sequences = [];
  for (const d of data) {
    const ids = [...d.promptIds, ...d.responseIds];
    const score = async (adapter: 'base' | number) => [null, ...Array.from((await engine.score([{ promptIds: [ids[0]], responseIds: ids.slice(1) }], { adapter }))[0])];
    sequences.push({ ids, base: await score('base'), adapted: await score(v) });
  }
  writeFileSync(join(out, 'reference.json'), JSON.stringify({ model: resolve(values.model), adapter: join(out, 'adapter'), sequences }, null, 1) + '\n');
  process.stderr.write(`wrote ${join(out, 'adapter')} and ${join(out, 'reference.json')} (${sequences.length} sequences)\n`);
} finally {
  await engine.close();
}
