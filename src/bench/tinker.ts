// `bench tinker`: what the Tinker path costs over calling the embedded engine directly. One process
// holds two identical engines (one thread each): one called directly, one behind serve-tinker on
// loopback and driven by TinkerEngine (HTTP, futures with long-polls, JSON or protobuf). Each rep
// runs the same operation on both, alternating, so both see the same machine load; medians and the
// ratio are reported for sampling, scoring and one training step (forward_backward + optim_step +
// sampler snapshot + publish).
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { TinkerServer } from '../engine/tinker/server.ts';
import { TinkerEngine } from '../engine/tinker/engine.ts';
import { collect, type TrainingEngine, type Datum } from '../engine/types.ts';
import { median } from './stats.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BenchTinkerOptions { model: string; reps: number; maxTokens: number; batch: number; wire: 'proto' | 'json'; log?: (l: string) => void }
export interface OpResult { directMs: number; tinkerMs: number; overheadMs: number; ratio: number }
export interface BenchTinkerResult { model: string; wire: string; reps: number; maxTokens: number; batch: number; sample: OpResult; score: OpResult; trainStep: OpResult; httpRequestsPerTrainStep: number }

export async function benchTinker(o: BenchTinkerOptions): Promise<BenchTinkerResult> {
  const log = o.log ?? (() => {});
  const data = mkdtempSync(join(tmpdir(), 'ocrl-bench-tinker-'));
  const direct = await EmbeddedEngine.load(o.model, { threads: 1 });
  const remote = await EmbeddedEngine.load(o.model, { threads: 1 });
  const server = await new TinkerServer({ engine: remote, modelName: direct.info.modelId, dataDir: data, port: 0 }).listen();
  const tinker = await TinkerEngine.connect({ baseUrl: server.url, tokenizerDir: o.model, wire: o.wire });
  try {
    const prompt = direct.tokenizer.encode('Once upon a time, there was a little girl named Lily.');
    const params = { maxTokens: o.maxTokens, temperature: 0, topP: 1, topK: 0, ignoreEos: true };
    const ref = await collect(direct.sample(prompt, params));
    const datum: Datum = { promptIds: prompt, responseIds: ref.ids, advantages: ref.ids.map((_, i) => (i % 2 ? 1 : -1)), behaviourLogprobs: ref.logprobs };
    for (const e of [direct, tinker] as TrainingEngine[]) await e.configureTraining({ rank: 8, seed: 1 });
    const ops: Record<'sample' | 'score' | 'trainStep', (e: TrainingEngine) => Promise<unknown>> = {
      sample: (e) => collect(e.sample(prompt, params)),
      score: (e) => e.score([{ promptIds: prompt, responseIds: ref.ids }], { adapter: 'base' }),
      trainStep: async (e) => {
        await e.forwardBackward(Array.from({ length: o.batch }, () => datum), { kind: 'ppo' });
        await e.optimStep({ learningRate: 1e-4 });
        await e.publish(await e.saveWeights());
      },
    };
    const out = {} as Record<keyof typeof ops, OpResult>;
    let requestsPerStep = 0;
    for (const [name, op] of Object.entries(ops) as [keyof typeof ops, (e: TrainingEngine) => Promise<unknown>][]) {
      await op(direct); await op(tinker); // warm-up
      const a: number[] = [], b: number[] = [];
      for (let i = 0; i < o.reps; i++) {
        let t0 = performance.now(); await op(direct); a.push(performance.now() - t0);
        const before = tinker.session.http.requests;
        t0 = performance.now(); await op(tinker); b.push(performance.now() - t0);
        if (name === 'trainStep') requestsPerStep = tinker.session.http.requests - before;
      }
      const d = median(a), t = median(b);
      out[name] = { directMs: round(d), tinkerMs: round(t), overheadMs: round(t - d), ratio: Math.round((t / d) * 100) / 100 };
      log(`${name}: direct ${d.toFixed(1)} ms, over Tinker (${o.wire}) ${t.toFixed(1)} ms (+${(t - d).toFixed(1)} ms, ×${(t / d).toFixed(2)}), median of ${o.reps}`);
    }
    return { model: direct.info.modelId, wire: o.wire, reps: o.reps, maxTokens: o.maxTokens, batch: o.batch, ...out, httpRequestsPerTrainStep: requestsPerStep };
  } finally {
    await tinker.close(); await server.close(); await remote.close(); await direct.close();
    rmSync(data, { recursive: true, force: true });
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
