// `openclaw-rl bench engine`: GEMM throughput of each kernel at the shapes of
// shared/reference/engines.md, then whole-model prefill and decode speed for a model or a shape.
import { availableParallelism } from 'node:os';
import { Arena } from '../engine/embedded/arena.ts';
import { Transformer, createKernel } from '../engine/embedded/model.ts';
import { loadConfig } from '../engine/embedded/config.ts';
import { loadWeights } from '../engine/embedded/weights.ts';
import type { KernelName, Kernel } from '../engine/embedded/kernels/kernel.ts';
import { TsKernel } from '../engine/embedded/kernels/ts.ts';
import { WasmKernel } from '../engine/embedded/kernels/wasm.ts';
import { packPanels, packedLength, type WeightsDtype } from '../engine/embedded/kernels/packed.ts';
import { NativeKernel, loadNativeAddon } from '../engine/embedded/kernels/native.ts';
import { SHAPES, randomModelInMemory, shapeModelDir } from './shapes.ts';
import { ChatTokenizer } from '../engine/embedded/tokenizer.ts';
import type { WeightsPlacement } from '../engine/embedded/weight-memory.ts';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { median, timeRepeated, peakRssBytes } from './stats.ts';
import { argmax } from '../engine/embedded/ops/logits.ts';

/** M × K · K × N, as listed in engines.md */
export const GEMM_SHAPES: [string, number, number, number][] = [
  ['15M prefill', 256, 288, 768],
  ['15M decode LM head', 1, 288, 32000],
  ['135M prefill MLP', 256, 576, 1536],
  ['135M prefill attn', 256, 576, 576],
  ['135M decode MLP', 1, 576, 1536],
  ['135M decode LM head', 1, 576, 49152],
  ['135M LM head prefill', 256, 576, 49152],
];

export interface GemmRow { shape: string; m: number; k: number; n: number; gflops: Record<string, number> }
export interface ModelBench {
  model: string; kernel: string; threads: number; params: number; weightBytes: number; weightsDtype: WeightsDtype;
  /** where the matrices live (weight-memory.ts), and how long building or loading the model took */
  weightsPlacement: WeightsPlacement; loadMs: number;
  /** the greedy decode as text, when the model folder has a tokenizer */
  sampleText?: string;
  prefillTokens: number; prefillTokensPerSec: number; decodeTokens: number; decodeTokensPerSec: number; decodeMsPerToken: number;
  /** CPU time of all the process's threads per decoded token (median wall time is decodeMsPerToken) */
  decodeCpuMsPerToken: number;
}
export interface EngineBenchResult { gemm: GemmRow[]; model: ModelBench | null; peakRssBytes: number; node: string; cpus: number }

export interface EngineBenchOptions {
  model?: string; shape?: string; kernel?: KernelName; threads?: number; weightsDtype?: WeightsDtype;
  gemm?: boolean; prefill?: number; decode?: number; budgetMs?: number;
  /** with `shape`: write it once as BF16 safetensors with the Qwen3 tokenizer (shapeModelDir) and load it as a checkpoint */
  onDisk?: { tokenizerDir: string; cacheDir?: string };
  log?: (line: string) => void;
}

export async function benchGemm(threads: number, budgetMs: number, log: (l: string) => void): Promise<GemmRow[]> {
  const arena = new Arena();
  const kernels: Kernel[] = [new TsKernel(), new WasmKernel(arena, 1)];
  if (threads > 1) kernels.push(new WasmKernel(arena, threads));
  if (loadNativeAddon().addon) kernels.push(new NativeKernel(arena, 1), ...(threads > 1 ? [new NativeKernel(arena, threads)] : []));
  const rows: GemmRow[] = [];
  for (const [shape, m, k, n] of GEMM_SHAPES) {
    const a = arena.alloc(m * k), b = arena.alloc(n * k), c = arena.alloc(m * n);
    for (let i = 0; i < a.length; i++) a[i] = Math.random() - 0.5;
    for (let i = 0; i < b.length; i++) b[i] = Math.random() - 0.5;
    const gflops: Record<string, number> = {};
    const packed = { data: arena.alloc(packedLength(n, k)), rows: n, cols: k };
    packPanels(b, n, k, packed.data);
    for (const kern of kernels) {
      // the TS kernel is ~2 GFLOPS: one timed run is plenty for the big shapes
      const reps = kern instanceof TsKernel ? 1 : 3;
      const ms = median(timeRepeated(() => kern.matmulNT(c, a, b, m, n, k), kern instanceof TsKernel ? 0 : budgetMs, reps));
      gflops[`${kern.name}-${kern.threads}t`] = +((2 * m * n * k) / ms / 1e6).toFixed(1);
      // packed weights (what the model uses for its frozen matrices)
      if (kern instanceof TsKernel) continue;
      const pms = median(timeRepeated(() => kern.matmulPacked(c, a, packed, m), budgetMs, reps));
      gflops[`${kern.name}-packed-${kern.threads}t`] = +((2 * m * n * k) / pms / 1e6).toFixed(1);
    }
    arena.free(packed.data);
    log(`gemm ${shape.padEnd(22)} ${m}×${k}·${k}×${n}  ${Object.entries(gflops).map(([kk, v]) => `${kk} ${v}`).join('  ')} GFLOPS`);
    rows.push({ shape, m, k, n, gflops });
    arena.free(a); arena.free(b); arena.free(c);
  }
  for (const kern of kernels) await kern.close();
  return rows;
}

export async function benchModel(opts: EngineBenchOptions): Promise<ModelBench> {
  const log = opts.log ?? (() => {});
  const threads = opts.threads ?? availableParallelism();
  let model: Transformer, name: string;
  const dir = opts.model ?? (opts.onDisk ? await writtenShape(opts.shape ?? '135m', opts.onDisk, log) : undefined);
  const t0 = performance.now();
  if (dir) {
    const cfg = loadConfig(dir);
    const arena = new Arena();
    model = new Transformer(cfg, loadWeights(dir, cfg, arena, opts.weightsDtype), createKernel(arena, opts.kernel, threads), arena);
    name = opts.model ?? `random ${opts.shape} (from ${dir})`;
  } else {
    const raw = SHAPES[opts.shape ?? '135m'];
    if (!raw) throw new Error(`unknown shape '${opts.shape}' (known: ${Object.keys(SHAPES).join(', ')})`);
    log(`building a random-weight ${opts.shape} model in memory…`);
    const { cfg, weights, arena } = randomModelInMemory(raw, 1, opts.weightsDtype);
    model = new Transformer(cfg, weights, createKernel(arena, opts.kernel, threads), arena);
    name = `random ${opts.shape ?? '135m'}`;
  }
  const loadMs = performance.now() - t0;
  log(`loaded in ${(loadMs / 1000).toFixed(1)} s: ${(model.weights.bytes / 2 ** 30).toFixed(2)} GiB of weights (${model.weights.dtype ?? 'f32'}, ${model.weights.placement ?? 'arena'}), ${model.kernel.name} × ${model.kernel.threads}`);
  const { cfg } = model;
  const W = model.weights, size = (m: { rows: number; cols: number }) => m.rows * m.cols;
  const params = size(W.embed) + (W.lmHead !== W.embed ? size(W.lmHead) : 0) + W.finalNorm.length + W.layers.reduce((n, L) => n + size(L.wqkv) + size(L.wo) + size(L.wgu) + size(L.wdown) +
    L.inputNorm.length + L.postNorm.length + (L.bqkv?.length ?? 0) + (L.qNorm?.length ?? 0) + (L.kNorm?.length ?? 0), 0);
  const V = cfg.vocabSize, H = cfg.hiddenSize;
  const prefillT = Math.min(opts.prefill ?? 256, model.maxContext - 1);
  const decodeN = Math.min(opts.decode ?? 64, model.maxContext - 17);
  const logits = model.arena.alloc(V);
  const prompt = Array.from({ length: prefillT }, (_, i) => (i * 7919 + 3) % V);

  // prefill: a whole prompt through the model, logits of its last row (as serving does)
  const prefillMs = median(timeRepeated(() => {
    const cache = model.newCache();
    const h = model.forward([{ tokens: prompt, cache }]);
    model.logits(logits, h.subarray((prefillT - 1) * H, prefillT * H), 1);
    cache.release();
  }, opts.budgetMs ?? 3000, 2, 10));
  log(`prefill ${prefillT} tokens: ${prefillMs.toFixed(1)} ms (${((prefillT / prefillMs) * 1000).toFixed(0)} tok/s)`);

  // decode: greedy, one token at a time with the KV cache, after a 16-token prompt
  const cache = model.newCache();
  let h = model.forward([{ tokens: prompt.slice(0, 16), cache }]);
  model.logits(logits, h.subarray(15 * H, 16 * H), 1);
  const stepMs: number[] = [], decoded: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < decodeN; i++) {
    const t0 = performance.now();
    decoded.push(argmax(logits, 0, V));
    h = model.forward([{ tokens: [decoded[i]], cache }]);
    model.logits(logits, h, 1);
    stepMs.push(performance.now() - t0);
  }
  // CPU time (every thread of the process) per token: on a shared machine the wall clock measures the
  // share the scheduler gives, this what a token costs
  const cpu = process.cpuUsage(cpu0), decodeCpuMs = (cpu.user + cpu.system) / 1000 / decodeN;
  cache.release();
  const decodeMs = median(stepMs);
  log(`decode ${decodeN} tokens: ${decodeMs.toFixed(2)} ms/token (${(1000 / decodeMs).toFixed(1)} tok/s), ${decodeCpuMs.toFixed(1)} ms of CPU time per token`);
  let sampleText: string | undefined;
  if (dir && existsSync(join(dir, 'tokenizer.json'))) {
    sampleText = ChatTokenizer.load(dir).decode(decoded);
    log(`greedy text: ${JSON.stringify(sampleText.slice(0, 200))}`);
  }
  await model.close();
  return {
    model: name, kernel: model.kernel.name, threads: model.kernel.threads, params, weightBytes: model.weights.bytes, weightsDtype: model.weights.dtype ?? 'f32',
    weightsPlacement: model.weights.placement ?? 'arena', loadMs: Math.round(loadMs), sampleText,
    prefillTokens: prefillT, prefillTokensPerSec: +((prefillT / prefillMs) * 1000).toFixed(1),
    decodeTokens: decodeN, decodeTokensPerSec: +(1000 / decodeMs).toFixed(1), decodeMsPerToken: +decodeMs.toFixed(2), decodeCpuMsPerToken: +decodeCpuMs.toFixed(1),
  };
}

/** The folder of a random `shape` written as BF16 safetensors (once; later runs reuse it). */
async function writtenShape(shape: string, o: NonNullable<EngineBenchOptions['onDisk']>, log: (l: string) => void): Promise<string> {
  const t0 = performance.now();
  log(`writing (or finding) the random ${shape} model as BF16 safetensors…`);
  const dir = shapeModelDir(shape, o.tokenizerDir, o.cacheDir, 'BF16');
  log(`  ${dir} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  return dir;
}

export async function benchEngine(opts: EngineBenchOptions): Promise<EngineBenchResult> {
  const log = opts.log ?? (() => {});
  const threads = opts.threads ?? availableParallelism();
  const gemm = opts.gemm === false ? [] : await benchGemm(threads, opts.budgetMs ?? 1000, log);
  const model = opts.model || opts.shape ? await benchModel({ ...opts, threads }) : null;
  return { gemm, model, peakRssBytes: peakRssBytes(), node: process.version, cpus: availableParallelism() };
}
