// `openclaw-rl bench train`: training throughput — forwardBackward (PPO or cross-entropy loss) +
// optimStep over a batch of sequences, for a LoRA adapter or (--full) every weight — with the time
// split between matrix multiplies, attention and the rest.
import { availableParallelism } from 'node:os';
import { Arena } from '../engine/embedded/arena.ts';
import { Transformer, createKernel } from '../engine/embedded/model.ts';
import { loadConfig } from '../engine/embedded/config.ts';
import { loadWeights } from '../engine/embedded/weights.ts';
import { LoraTrainer } from '../engine/embedded/trainer.ts';
import { FullTrainer } from '../engine/embedded/full-trainer.ts';
import type { Kernel, KernelName } from '../engine/embedded/kernels/kernel.ts';
import type { WeightsDtype } from '../engine/embedded/kernels/packed.ts';
import type { Datum } from '../engine/types.ts';
import { SHAPES, randomModelInMemory } from './shapes.ts';
import { median, peakRssBytes } from './stats.ts';

export interface TrainBenchOptions {
  model?: string; shape?: string; kernel?: KernelName; threads?: number; weightsDtype?: WeightsDtype;
  rank?: number; seq?: number; batch?: number; steps?: number; log?: (l: string) => void;
  /** train every weight instead of a LoRA adapter */
  full?: boolean;
  loss?: 'ppo' | 'cross_entropy';
}

export interface TrainBenchResult {
  model: string; kernel: string; threads: number; mode: 'lora' | 'full'; loss: 'ppo' | 'cross_entropy'; rank: number; seq: number; batch: number;
  /** parameters trained: the adapter's, or every weight's */
  trainedParameters: number;
  loraParameters: number; stepMs: number; tokensPerSec: number;
  /** share of a step's time in each part (instrumented step) */
  breakdown: { matmul: number; attention: number; other: number };
  peakRssBytes: number;
}

/** Wraps a kernel to add up the time spent in each operation. */
class TimedKernel implements Kernel {
  readonly inner: Kernel;
  matmulMs = 0;
  attentionMs = 0;
  constructor(inner: Kernel) { this.inner = inner; }
  get name() { return this.inner.name; }
  get threads() { return this.inner.threads; }
  private timed<T>(f: () => T, add: (ms: number) => void): T { const t0 = performance.now(); const r = f(); add(performance.now() - t0); return r; }
  matmulNT(...a: Parameters<Kernel['matmulNT']>) { this.timed(() => this.inner.matmulNT(...a), (ms) => (this.matmulMs += ms)); }
  matmulPacked(...a: Parameters<Kernel['matmulPacked']>) { this.timed(() => this.inner.matmulPacked(...a), (ms) => (this.matmulMs += ms)); }
  matmulPackedT(...a: Parameters<Kernel['matmulPackedT']>) { this.timed(() => this.inner.matmulPackedT(...a), (ms) => (this.matmulMs += ms)); }
  matmulNN(...a: Parameters<Kernel['matmulNN']>) { this.timed(() => this.inner.matmulNN(...a), (ms) => (this.matmulMs += ms)); }
  matmulTN(...a: Parameters<Kernel['matmulTN']>) { this.timed(() => this.inner.matmulTN(...a), (ms) => (this.matmulMs += ms)); }
  attention(...a: Parameters<Kernel['attention']>) { this.timed(() => this.inner.attention(...a), (ms) => (this.attentionMs += ms)); }
  attentionBackward(...a: Parameters<Kernel['attentionBackward']>) { this.timed(() => this.inner.attentionBackward(...a), (ms) => (this.attentionMs += ms)); }
  swiglu(...a: Parameters<Kernel['swiglu']>) { this.inner.swiglu(...a); }
  swigluBackward(...a: Parameters<Kernel['swigluBackward']>) { this.inner.swigluBackward(...a); }
  rowsLogSumExp(...a: Parameters<Kernel['rowsLogSumExp']>) { this.inner.rowsLogSumExp(...a); }
  rowsSoftmaxGrad(...a: Parameters<Kernel['rowsSoftmaxGrad']>) { this.inner.rowsSoftmaxGrad(...a); }
  close() { return this.inner.close(); }
}

export async function benchTrain(opts: TrainBenchOptions): Promise<TrainBenchResult> {
  const log = opts.log ?? (() => {});
  const threads = opts.threads ?? availableParallelism();
  const rank = opts.rank ?? 16, seq = opts.seq ?? 256, batch = opts.batch ?? 4, steps = opts.steps ?? 3;
  let model: Transformer, name: string;
  let kernel: TimedKernel;
  if (opts.model) {
    const cfg = loadConfig(opts.model);
    const arena = new Arena();
    kernel = new TimedKernel(createKernel(arena, opts.kernel, threads));
    model = new Transformer(cfg, loadWeights(opts.model, cfg, arena, opts.weightsDtype), kernel, arena);
    name = opts.model;
  } else {
    const raw = SHAPES[opts.shape ?? '15m'];
    if (!raw) throw new Error(`unknown shape '${opts.shape}' (known: ${Object.keys(SHAPES).join(', ')})`);
    log(`building a random-weight ${opts.shape ?? '15m'} model in memory…`);
    const built = randomModelInMemory(raw, 1, opts.weightsDtype);
    kernel = new TimedKernel(createKernel(built.arena, opts.kernel, threads));
    model = new Transformer(built.cfg, built.weights, kernel, built.arena);
    name = `random ${opts.shape ?? '15m'}`;
  }
  const V = model.cfg.vocabSize;
  if (seq > model.maxContext) throw new Error(`--seq ${seq} exceeds the model's context of ${model.maxContext}`);
  const trainer = opts.full ? new FullTrainer(model) : new LoraTrainer(model, { rank, alpha: 2 * rank, seed: 1 });
  const loss = opts.loss ?? 'ppo';
  // a quarter prompt, three quarters response; the loss covers every response token
  const promptLen = Math.max(1, Math.floor(seq / 4));
  const data: Datum[] = Array.from({ length: batch }, (_, b) => {
    const ids = Array.from({ length: seq }, (_, i) => (i * 7919 + b * 104729 + 3) % V);
    const n = seq - promptLen;
    return { promptIds: ids.slice(0, promptLen), responseIds: ids.slice(promptLen), behaviourLogprobs: new Array(n).fill(-5), advantages: Array.from({ length: n }, (_, t) => (t % 2 ? 1 : -1)) };
  });
  const times: number[] = [];
  let breakdown = { matmul: 0, attention: 0, other: 0 };
  for (let s = 0; s <= steps; s++) {
    kernel.matmulMs = 0; kernel.attentionMs = 0;
    const t0 = performance.now();
    trainer.forwardBackward(data, { kind: loss });
    trainer.optimStep({ learningRate: 1e-5 });
    const ms = performance.now() - t0;
    if (s === 0) { log(`warm-up step: ${ms.toFixed(0)} ms`); continue; } // first step allocates
    times.push(ms);
    breakdown = { matmul: kernel.matmulMs / ms, attention: kernel.attentionMs / ms, other: 1 - (kernel.matmulMs + kernel.attentionMs) / ms };
    log(`step ${s}: ${ms.toFixed(0)} ms (${((batch * seq) / ms * 1000).toFixed(1)} tok/s; matmul ${(kernel.matmulMs).toFixed(0)} ms, attention ${kernel.attentionMs.toFixed(0)} ms)`);
  }
  const stepMs = median(times);
  const result: TrainBenchResult = {
    model: name, kernel: kernel.name, threads: kernel.threads, mode: opts.full ? 'full' : 'lora', loss, rank, seq, batch,
    trainedParameters: trainer.parameterCount, loraParameters: trainer instanceof LoraTrainer ? trainer.adapter.parameterCount : 0, stepMs: +stepMs.toFixed(1), tokensPerSec: +((batch * seq) / stepMs * 1000).toFixed(1),
    breakdown: { matmul: +breakdown.matmul.toFixed(3), attention: +breakdown.attention.toFixed(3), other: +breakdown.other.toFixed(3) },
    peakRssBytes: peakRssBytes(),
  };
  trainer.release();
  await model.close();
  return result;
}
