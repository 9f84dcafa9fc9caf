// Supervised fine-tuning over any TrainingEngine: cross-entropy on assistant tokens only, AdamW,
// batches of about `batchTokens` tokens grouped by length, epochs, a held-out split chosen by the
// seed with its loss measured every epoch (and every `evalEvery` steps), progress callbacks, and
// checkpoints (engine training state + position) that resume exactly where a run stopped.
// Everything random is drawn from the seed, so the same data, seed and settings give the same run.
import { existsSync, readFileSync, writeFileSync, mkdirSync, openSync, fsyncSync, closeSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { Rng } from '../engine/embedded/rng.ts';
import type { AdamParams, Datum, TrainingEngine } from '../engine/types.ts';
import type { EncodedExample } from './sft-data.ts';

export * from './sft-data.ts';

export interface SftOptions {
  epochs?: number;
  learningRate?: number;
  /** tokens per optimizer step, about (sequences are never split; a longer one forms its own batch) */
  batchTokens?: number;
  /** share of the examples held out for the eval loss (0 = none; at least one when > 0 and there are ≥ 2) */
  evalFraction?: number;
  seed?: number;
  /** also measure the eval loss every this many steps (0 = only at the end of each epoch) */
  evalEvery?: number;
  /** learning-rate schedule: 'constant', or 'cosine' (decays to minLearningRateRatio × the peak by the last step) */
  schedule?: 'constant' | 'cosine';
  /** steps of linear warm-up from 0 to the peak (both schedules) */
  warmupSteps?: number;
  /** the cosine schedule's floor, as a share of the peak */
  minLearningRateRatio?: number;
  /** the other AdamW settings (defaults: types.ts ADAM_DEFAULTS) */
  adam?: Omit<AdamParams, 'learningRate'>;
  /** a folder for checkpoints (training state + position), written every `checkpointEvery` steps and at the end of each epoch */
  checkpointDir?: string;
  checkpointEvery?: number;
  /** continue from checkpointDir when it holds a checkpoint of this same run */
  resume?: boolean;
  onProgress?: (p: SftProgress) => void;
  /** stop between steps (a checkpoint is written first when checkpointDir is set) */
  signal?: AbortSignal;
}

export const SFT_DEFAULTS = {
  epochs: 1, learningRate: 1e-3, batchTokens: 4096, evalFraction: 0.05, seed: 1, evalEvery: 0, checkpointEvery: 50,
  schedule: 'constant' as 'constant' | 'cosine', warmupSteps: 0, minLearningRateRatio: 0.1,
};

/**
 * The learning rate of optimizer step `step` (0-based) of `totalSteps`: a linear warm-up over
 * `warmupSteps` (step k gets (k + 1) / warmupSteps of the peak, so the first step moves the weights),
 * then the peak (constant) or a cosine from the peak down to `minRatio` × peak at the last step.
 */
export function learningRateAt(step: number, totalSteps: number, peak: number, schedule: 'constant' | 'cosine', warmupSteps = 0, minRatio = 0.1): number {
  if (step < warmupSteps) return (peak * (step + 1)) / warmupSteps;
  if (schedule === 'constant') return peak;
  const span = Math.max(1, totalSteps - 1 - warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - warmupSteps) / span));
  return peak * (minRatio + (1 - minRatio) * 0.5 * (1 + Math.cos(Math.PI * progress)));
}

export interface SftProgress {
  epoch: number;
  epochs: number;
  step: number;
  totalSteps: number;
  /** mean loss per loss token of the last step */
  loss: number;
  /** the latest eval loss (null until measured) */
  evalLoss: number | null;
  tokensPerSecond: number;
  /** seconds left at the current pace */
  etaSeconds: number;
  /** the learning rate of the last step (the schedule's value) */
  learningRate?: number;
  /** 'step' after an optimizer step, 'eval' after an eval measurement */
  event: 'step' | 'eval';
  skipped?: string;
}

export interface SftResult {
  steps: number;
  trainExamples: number;
  evalExamples: number;
  /** loss tokens trained on (all epochs) */
  tokens: number;
  /** eval loss before any training, and after each epoch */
  evalLossBefore: number | null;
  evalLossPerEpoch: number[];
  finalTrainLoss: number | null;
  skippedSteps: number;
  resumedFromStep: number | null;
  seconds: number;
}

/**
 * The Datum of an encoded example: prompt = ids before the first loss token (at least one id). A mask
 * value is the token's loss weight (0: no loss; 1: the usual; more: that token counts more).
 */
export function exampleToDatum(ex: EncodedExample): Datum {
  let first = ex.mask.findIndex((m) => m > 0), last = ex.mask.findLastIndex((m) => m > 0);
  if (last < 1) throw new RangeError('an example needs a loss token after its first id');
  first = Math.max(first, 1);
  return { promptIds: ex.ids.slice(0, first), responseIds: ex.ids.slice(first, last + 1), lossMask: ex.mask.slice(first, last + 1) };
}

/** Fisher–Yates over 0..n−1 with a seeded generator. */
function permutation(n: number, rng: Rng): number[] {
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) { const j = Math.floor(rng.next() * (i + 1)); [p[i], p[j]] = [p[j], p[i]]; }
  return p;
}

/** Deterministic train/eval split: a seeded permutation, the first ⌈n·fraction⌉ held out. */
export function splitExamples<T>(examples: T[], evalFraction: number, seed: number): { train: T[]; evalSet: T[] } {
  if (!(evalFraction >= 0 && evalFraction < 1)) throw new RangeError(`evalFraction must be in [0, 1) (got ${evalFraction})`);
  const n = examples.length;
  const nEval = evalFraction > 0 && n >= 2 ? Math.min(n - 1, Math.max(1, Math.round(n * evalFraction))) : 0;
  const order = permutation(n, new Rng(seed ^ 0x5f7d));
  const held = new Set(order.slice(0, nEval));
  return { train: examples.filter((_, i) => !held.has(i)), evalSet: examples.filter((_, i) => held.has(i)) };
}

/**
 * Batches for one epoch: examples sorted by length (ties broken by a seeded shuffle) are cut into
 * runs of about `batchTokens` tokens, and the runs are shuffled. Returns indices into `lengths`.
 */
export function lengthGroupedBatches(lengths: number[], batchTokens: number, seed: number): number[][] {
  const rng = new Rng(seed);
  const order = permutation(lengths.length, rng).sort((a, b) => lengths[a] - lengths[b]);
  const batches: number[][] = [];
  let tokens = 0;
  for (const i of order) {
    if (batches.length === 0 || (tokens + lengths[i] > batchTokens && batches.at(-1)!.length > 0)) { batches.push([]); tokens = 0; }
    batches.at(-1)!.push(i);
    tokens += lengths[i];
  }
  return permutation(batches.length, rng).map((k) => batches[k]);
}

/** Mean loss per loss token of `data` under the weights being trained (every loss token counts once, whatever its training weight). */
export async function evalLoss(engine: TrainingEngine, data: Datum[]): Promise<number> {
  let sum = 0, n = 0;
  const CHUNK = 64;
  for (let i = 0; i < data.length; i += CHUNK) {
    const part = data.slice(i, i + CHUNK);
    const lps = await engine.score(part, { adapter: 'current' });
    part.forEach((d, k) => lps[k].forEach((lp, t) => { const m = (d.lossMask?.[t] ?? 1) > 0 ? 1 : 0; sum -= lp * m; n += m; }));
  }
  return n > 0 ? sum / n : NaN;
}

interface Position {
  runId: string;
  epoch: number;
  /** batches of `epoch` already done */
  batch: number;
  step: number;
  tokens: number;
  skippedSteps: number;
  evalLossBefore: number | null;
  evalLossPerEpoch: number[];
  lastEvalLoss: number | null;
  finalTrainLoss: number | null;
}

/** What makes two runs the same run (a checkpoint of another run is never resumed). */
function runIdOf(examples: EncodedExample[], o: SftOptions): string {
  const h = createHash('sha256');
  const schedule = (o.schedule && o.schedule !== 'constant') || o.warmupSteps ? [o.schedule, o.warmupSteps ?? 0, o.minLearningRateRatio] : [];
  h.update(JSON.stringify([o.epochs, o.learningRate, o.batchTokens, o.evalFraction, o.seed, o.adam ?? null, ...schedule]));
  // 0/1 masks hash as bytes (as before weighted masks existed, so those checkpoints still resume); weights as floats
  for (const e of examples) { h.update(Int32Array.from(e.ids)); h.update(e.mask.every((m) => m === 0 || m === 1) ? Uint8Array.from(e.mask) : Float64Array.from(e.mask)); h.update('|'); }
  return h.digest('hex').slice(0, 24);
}

const POSITION_FILE = 'sft_position.json';

function writeFileAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  const fd = openSync(tmp, 'r');
  try { fsyncSync(fd); } finally { closeSync(fd); }
  renameSync(tmp, path);
}

/**
 * Train `engine` (already configured: configureTraining) on `examples`. With `resume` and a
 * checkpoint of the same run in checkpointDir, the training state and position are restored first.
 */
export async function runSft(engine: TrainingEngine, examples: EncodedExample[], options: SftOptions = {}): Promise<SftResult> {
  // an option given as undefined keeps its default
  const o = { ...SFT_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as typeof SFT_DEFAULTS & SftOptions;
  if (!(Number.isInteger(o.epochs) && o.epochs >= 1)) throw new RangeError(`epochs must be a positive integer (got ${o.epochs})`);
  if (!(o.batchTokens >= 1)) throw new RangeError(`batchTokens must be positive (got ${o.batchTokens})`);
  if (!(o.learningRate >= 0)) throw new RangeError(`learningRate must be non-negative (got ${o.learningRate})`);
  if (o.schedule !== 'constant' && o.schedule !== 'cosine') throw new RangeError(`schedule must be 'constant' or 'cosine' (got ${o.schedule})`);
  if (!(Number.isInteger(o.warmupSteps) && o.warmupSteps >= 0)) throw new RangeError(`warmupSteps must be a non-negative integer (got ${o.warmupSteps})`);
  if (!(o.minLearningRateRatio >= 0 && o.minLearningRateRatio <= 1)) throw new RangeError(`minLearningRateRatio must be in [0, 1] (got ${o.minLearningRateRatio})`);
  if (examples.length === 0) throw new RangeError('no examples to train on');
  const started = Date.now();
  const { train, evalSet } = splitExamples(examples, o.evalFraction, o.seed);
  const trainData = train.map(exampleToDatum), evalData = evalSet.map(exampleToDatum);
  const lengths = trainData.map((d) => d.promptIds.length + d.responseIds.length);
  const epochBatches = (epoch: number) => lengthGroupedBatches(lengths, o.batchTokens, o.seed * 1000003 + epoch);
  const stepsPerEpoch = epochBatches(0).length;
  const totalSteps = stepsPerEpoch * o.epochs;
  const runId = runIdOf(examples, o);
  const adam: AdamParams = { ...o.adam, learningRate: o.learningRate };

  let pos: Position = { runId, epoch: 0, batch: 0, step: 0, tokens: 0, skippedSteps: 0, evalLossBefore: null, evalLossPerEpoch: [], lastEvalLoss: null, finalTrainLoss: null };
  let resumedFromStep: number | null = null;
  const posPath = o.checkpointDir ? join(o.checkpointDir, POSITION_FILE) : null;
  if (o.resume && posPath && existsSync(posPath)) {
    const saved = JSON.parse(readFileSync(posPath, 'utf8')) as Position;
    if (saved.runId !== runId) throw new RangeError(`${o.checkpointDir} holds a checkpoint of a different run (other data or settings): remove it or drop --resume`);
    await engine.loadTrainingState(join(o.checkpointDir!, 'state'));
    pos = saved;
    resumedFromStep = saved.step;
  }

  const checkpoint = async () => {
    if (!o.checkpointDir) return;
    mkdirSync(o.checkpointDir, { recursive: true });
    await engine.saveTrainingState(join(o.checkpointDir, 'state'));
    // the state folder is swapped in atomically, then the position file: a crash in between leaves an
    // older position beside a newer state, and the run id check still holds (the steps redone are few)
    writeFileAtomic(posPath!, JSON.stringify(pos) + '\n');
  };

  const report = (p: Omit<SftProgress, 'epochs' | 'totalSteps' | 'tokensPerSecond' | 'etaSeconds'>, secondsSoFar: number, tokensSoFar: number, stepsSoFar: number) => {
    const tps = secondsSoFar > 0 ? tokensSoFar / secondsSoFar : 0;
    const eta = stepsSoFar > 0 ? (secondsSoFar / stepsSoFar) * (totalSteps - p.step) : NaN;
    o.onProgress?.({ ...p, epochs: o.epochs, totalSteps, tokensPerSecond: tps, etaSeconds: eta });
  };

  if (evalData.length > 0 && pos.evalLossBefore === null) {
    pos.evalLossBefore = pos.lastEvalLoss = await evalLoss(engine, evalData);
    report({ epoch: 0, step: pos.step, loss: NaN, evalLoss: pos.lastEvalLoss, event: 'eval' }, 0, 0, 0);
  }

  const runStart = Date.now();
  let runTokens = 0, runSteps = 0;
  for (; pos.epoch < o.epochs; pos.epoch++, pos.batch = 0) {
    const batches = epochBatches(pos.epoch);
    for (; pos.batch < batches.length; ) {
      if (o.signal?.aborted) { await checkpoint(); throw new Error('SFT was stopped (a checkpoint was written)'); }
      const batch = batches[pos.batch].map((i) => trainData[i]);
      const fb = await engine.forwardBackward(batch, { kind: 'cross_entropy' });
      const lr = learningRateAt(pos.step, totalSteps, o.learningRate, o.schedule, o.warmupSteps, o.minLearningRateRatio);
      const st = await engine.optimStep({ ...adam, learningRate: lr });
      pos.batch++; pos.step++; pos.tokens += fb.tokens;
      runTokens += fb.tokens; runSteps++;
      if (st.skipped) pos.skippedSteps++;
      pos.finalTrainLoss = fb.loss;
      const secs = (Date.now() - runStart) / 1000;
      report({ epoch: pos.epoch, step: pos.step, loss: fb.loss, evalLoss: pos.lastEvalLoss, learningRate: lr, event: 'step', skipped: st.skipped ? st.reason : undefined }, secs, runTokens, runSteps);
      const epochEnd = pos.batch === batches.length;
      if (evalData.length > 0 && (epochEnd || (o.evalEvery > 0 && pos.step % o.evalEvery === 0))) {
        pos.lastEvalLoss = await evalLoss(engine, evalData);
        if (epochEnd) pos.evalLossPerEpoch.push(pos.lastEvalLoss);
        report({ epoch: pos.epoch, step: pos.step, loss: fb.loss, evalLoss: pos.lastEvalLoss, event: 'eval' }, (Date.now() - runStart) / 1000, runTokens, runSteps);
      }
      if (epochEnd) {
        // checkpoint as the start of the next epoch
        pos.epoch++; pos.batch = 0;
        await checkpoint();
        pos.epoch--; pos.batch = batches.length;
      } else if (o.checkpointEvery > 0 && pos.step % o.checkpointEvery === 0) await checkpoint();
    }
  }
  return {
    steps: pos.step, trainExamples: train.length, evalExamples: evalSet.length, tokens: pos.tokens,
    evalLossBefore: pos.evalLossBefore, evalLossPerEpoch: pos.evalLossPerEpoch, finalTrainLoss: pos.finalTrainLoss,
    skippedSteps: pos.skippedSteps, resumedFromStep, seconds: (Date.now() - started) / 1000,
  };
}
