// `openclaw-rl sft` (supervised fine-tuning on a chat JSONL file) and `openclaw-rl merge` (a LoRA
// adapter merged into full weights). Both write Hugging Face folders that `generate` and `serve` load.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { existsSync, rmSync } from 'node:fs';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { readSftFile, encodeRecords, runSft, SftDataError, SFT_DEFAULTS, type SftProgress } from '../trainer/sft.ts';
import { UsageError, num, modelDir } from './args.ts';

function seconds(s: number): string {
  if (!Number.isFinite(s)) return '?';
  const m = Math.floor(s / 60), r = Math.round(s % 60);
  return m > 0 ? `${m}m${String(r).padStart(2, '0')}s` : `${r}s`;
}

/** A progress line on stderr: rewritten in place on a terminal, one line per few seconds otherwise. */
function progressPrinter(): { update: (p: SftProgress) => void; done: () => void } {
  const tty = process.stderr.isTTY === true;
  let last = 0, pending = false;
  const fmt = (x: number | null) => (x === null || !Number.isFinite(x) ? '–' : x.toFixed(4));
  return {
    update(p) {
      const width = 24, filled = Math.round((p.step / Math.max(p.totalSteps, 1)) * width);
      const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] step ${p.step}/${p.totalSteps} epoch ${Math.min(p.epoch + 1, p.epochs)}/${p.epochs}` +
        `  loss ${fmt(p.loss)}  eval ${fmt(p.evalLoss)}  ${Math.round(p.tokensPerSecond)} tok/s  eta ${seconds(p.etaSeconds)}${p.skipped ? `  (step skipped: ${p.skipped})` : ''}`;
      const now = Date.now();
      if (tty) { process.stderr.write(`\r\x1b[2K${line}`); pending = true; }
      else if (p.event === 'eval' || p.skipped || now - last > 5000 || p.step === p.totalSteps) { process.stderr.write(line + '\n'); last = now; }
    },
    done() { if (pending) process.stderr.write('\n'); },
  };
}

export async function sftCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args: argv, strict: true,
    options: {
      model: { type: 'string' }, data: { type: 'string' }, out: { type: 'string' },
      full: { type: 'boolean', default: false }, 'lora-rank': { type: 'string' }, 'lora-alpha': { type: 'string' },
      epochs: { type: 'string' }, 'learning-rate': { type: 'string' }, 'batch-tokens': { type: 'string' },
      'eval-fraction': { type: 'string' }, 'eval-every': { type: 'string' }, seed: { type: 'string' },
      resume: { type: 'boolean', default: false }, 'checkpoint-dir': { type: 'string' }, 'checkpoint-every': { type: 'string' },
      'no-truncate': { type: 'boolean', default: false }, threads: { type: 'string' },
    },
  });
  if (!o.data) throw new UsageError('--data FILE.jsonl is required (one {"messages": [...], "tools"?: [...]} per line, or `openclaw-rl export` output)');
  if (!o.out) throw new UsageError('--out DIR is required (a PEFT adapter folder, or with --full a Hugging Face model folder)');
  if (o.full && (o['lora-rank'] !== undefined || o['lora-alpha'] !== undefined)) throw new UsageError('--full trains every weight: --lora-rank and --lora-alpha do not apply');
  const rank = num(o['lora-rank'], '--lora-rank', 16, (x) => Number.isInteger(x) && x >= 1);
  const settings = {
    epochs: num(o.epochs, '--epochs', SFT_DEFAULTS.epochs, (x) => Number.isInteger(x) && x >= 1),
    learningRate: num(o['learning-rate'], '--learning-rate', o.full ? 3e-4 : SFT_DEFAULTS.learningRate, (x) => x > 0),
    batchTokens: num(o['batch-tokens'], '--batch-tokens', SFT_DEFAULTS.batchTokens, (x) => Number.isInteger(x) && x >= 1),
    evalFraction: num(o['eval-fraction'], '--eval-fraction', SFT_DEFAULTS.evalFraction, (x) => x >= 0 && x < 1),
    evalEvery: num(o['eval-every'], '--eval-every', 0, (x) => Number.isInteger(x) && x >= 0),
    seed: num(o.seed, '--seed', SFT_DEFAULTS.seed, Number.isInteger),
    checkpointEvery: num(o['checkpoint-every'], '--checkpoint-every', SFT_DEFAULTS.checkpointEvery, (x) => Number.isInteger(x) && x >= 0),
  };
  const lora = o.full ? null : { rank, alpha: num(o['lora-alpha'], '--lora-alpha', 2 * rank, (x) => x > 0), seed: settings.seed };
  const out = resolve(o.out);
  const checkpointDir = resolve(o['checkpoint-dir'] ?? `${out}.checkpoint`);
  if (!existsSync(o.data)) throw new UsageError(`--data: no file at ${o.data}`);
  const { records, skipped } = (() => {
    try { return readSftFile(o.data!); } catch (e) { if (e instanceof SftDataError) throw new UsageError(e.message); throw e; }
  })();

  const engine = await EmbeddedEngine.load(await modelDir(o.model), { threads: o.threads ? num(o.threads, '--threads', 1, (x) => x >= 1) : undefined });
  try {
    const eosId = engine.tokenizer.eosToken !== null ? engine.tokenizer.tokenId(engine.tokenizer.eosToken) : undefined;
    const stopIds = [...new Set([...engine.info.eosTokenIds, ...(eosId !== undefined ? [eosId] : [])])];
    let examples;
    try {
      examples = encodeRecords(engine.tokenizer, records, { stopIds, maxTokens: engine.info.contextLength, vocabSize: engine.info.vocabSize, truncate: !o['no-truncate'] });
    } catch (e) {
      if (e instanceof SftDataError) throw new UsageError(`${o.data}:${e.message.replace(/^line /, '')}`);
      throw e;
    }
    const truncated = examples.filter((e) => e.truncated).length;
    const lossTokens = examples.reduce((a, e) => a + e.mask.reduce((x, m) => x + m, 0), 0);
    process.stderr.write(`${examples.length} examples (${lossTokens} assistant tokens) from ${o.data}` +
      `${skipped ? `, ${skipped} unfinished turns skipped` : ''}${truncated ? `, ${truncated} cut to the context of ${engine.info.contextLength} tokens` : ''}\n`);
    process.stderr.write(`training ${lora ? `a LoRA adapter (rank ${lora.rank}, alpha ${lora.alpha})` : 'every weight (full-parameter)'} on ${engine.info.modelId}, ` +
      `${settings.epochs} epoch(s), learning rate ${settings.learningRate}, ~${settings.batchTokens} tokens per step\n`);
    await engine.configureTraining(lora);
    const printer = progressPrinter();
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    let result;
    try {
      result = await runSft(engine, examples, { ...settings, checkpointDir, resume: o.resume, onProgress: printer.update, signal: stop.signal });
    } finally {
      printer.done();
      process.off('SIGINT', onSignal);
    }
    if (lora) await engine.saveAdapter(out, 'current'); else await engine.saveModel(out, 'current');
    rmSync(checkpointDir, { recursive: true, force: true });
    const f = (x: number | null | undefined) => (x === null || x === undefined ? '–' : x.toFixed(4));
    process.stderr.write(`done: ${result.steps} steps${result.resumedFromStep !== null ? ` (resumed at step ${result.resumedFromStep})` : ''}, ` +
      `${result.tokens} tokens in ${seconds(result.seconds)}; train loss ${f(result.finalTrainLoss)}; ` +
      `eval loss ${f(result.evalLossBefore)} → ${f(result.evalLossPerEpoch.at(-1))} on ${result.evalExamples} held-out examples` +
      `${result.skippedSteps ? `; ${result.skippedSteps} steps skipped (non-finite)` : ''}\n`);
    process.stderr.write(`wrote ${lora ? 'a PEFT adapter folder' : 'a Hugging Face model folder'} to ${out}\n`);
  } finally {
    await engine.close();
  }
}

export async function mergeCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: { model: { type: 'string' }, adapter: { type: 'string' }, out: { type: 'string' } } });
  if (!o.adapter) throw new UsageError('--adapter DIR is required (a PEFT LoRA adapter folder)');
  if (!o.out) throw new UsageError('--out DIR is required (where the merged Hugging Face model folder goes)');
  const engine = await EmbeddedEngine.load(await modelDir(o.model));
  try {
    const version = await engine.loadAdapter(o.adapter);
    await engine.saveModel(o.out, version);
    process.stderr.write(`wrote ${resolve(o.out)}: ${engine.info.modelId} with ${o.adapter} merged in\n`);
  } finally {
    await engine.close();
  }
}
