// `openclaw-rl sft` (supervised fine-tuning on a chat JSONL file) and `openclaw-rl merge` (a LoRA
// adapter merged into full weights). Both write Hugging Face folders that `generate` and `serve` load.
import { resolve } from 'node:path';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { defineCommand, opt, UsageError } from './command.ts';
import { modelDir, modelOption, threadsOption } from './args.ts';
import { SFT_DEFAULTS, type SftProgress } from '../trainer/sft.ts';

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

export const sftCommand = defineCommand({
  name: 'sft',
  summary: 'supervised fine-tuning on chat conversations (JSONL): a LoRA adapter, or with --full every weight',
  description: 'Trains on one {"messages": [...], "tools"?: [...]} per line (OpenAI chat format; `openclaw-rl export` output ' +
    'is accepted too, with its exact token ids). The loss covers only what the assistant produced (its text and tool ' +
    'calls, through its end-of-turn token). Batches of about --batch-tokens tokens are grouped by length; a share ' +
    '--eval-fraction of the conversations (chosen by --seed) is held out and its loss reported. A checkpoint is ' +
    'written every --checkpoint-every steps and at each epoch end into --checkpoint-dir; --resume continues from it.',
  options: {
    model: modelOption,
    data: opt.file('the chat conversations, one JSON object per line'),
    out: opt.path('the output: a PEFT adapter folder, or with --full a Hugging Face model folder', { placeholder: 'DIR' }),
    full: opt.flag('train every weight (embeddings, norms, projections, LM head) instead of a LoRA adapter'),
    'lora-rank': opt.int('LoRA rank', { min: 1, defaultText: '16' }),
    'lora-alpha': opt.number('LoRA alpha (scale alpha/rank)', { gt: 0, defaultText: '2 × rank' }),
    epochs: opt.int('passes over the training conversations', { min: 1, default: SFT_DEFAULTS.epochs }),
    'learning-rate': opt.number('AdamW learning rate', { gt: 0, defaultText: '1e-3 for LoRA, 3e-4 with --full' }),
    'lr-schedule': opt.choice(['constant', 'cosine'], 'learning-rate schedule: constant, or cosine down to a tenth of the peak by the last step', { default: 'constant' }),
    'warmup-steps': opt.int('steps of linear warm-up to the learning rate', { min: 0, default: 0 }),
    'batch-tokens': opt.int('about this many tokens per optimizer step', { min: 1, default: SFT_DEFAULTS.batchTokens }),
    'eval-fraction': opt.number('share of conversations held out for the eval loss', { min: 0, max: 0.9, default: SFT_DEFAULTS.evalFraction }),
    'eval-every': opt.int('also measure the eval loss every N steps (0: at epoch ends only)', { min: 0, default: 0 }),
    seed: opt.int('seed of the split, the batch order and the adapter initialisation', { default: SFT_DEFAULTS.seed }),
    resume: opt.flag('continue from the checkpoint in --checkpoint-dir'),
    'checkpoint-dir': opt.path('where checkpoints go', { placeholder: 'DIR', defaultText: '<out>.checkpoint' }),
    'checkpoint-every': opt.int('write a checkpoint every N steps (0: at epoch ends only)', { min: 0, default: SFT_DEFAULTS.checkpointEvery }),
    'no-truncate': opt.flag('refuse conversations longer than the context instead of cutting them'),
    threads: threadsOption,
  },
  check: (o) => {
    if (o.data === undefined) throw new UsageError('--data FILE.jsonl is required (one {"messages": [...], "tools"?: [...]} per line, or `openclaw-rl export` output)');
    if (o.out === undefined) throw new UsageError('--out DIR is required (a PEFT adapter folder, or with --full a Hugging Face model folder)');
    if (o.full && (o['lora-rank'] !== undefined || o['lora-alpha'] !== undefined)) throw new UsageError('--full trains every weight: --lora-rank and --lora-alpha do not apply');
  },
  examples: [
    'openclaw-rl sft --model DIR --data chats.jsonl --out my-adapter --epochs 2',
    'openclaw-rl sft --model DIR --data chats.jsonl --out my-model --full --learning-rate 3e-4',
    'openclaw-rl export --out turns.jsonl && openclaw-rl sft --model DIR --data turns.jsonl --out my-adapter',
  ],
  run: async (o) => {
    const { readSftFile, encodeRecords, runSft, SftDataError } = await import('../trainer/sft.ts');
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const data = o.data!;
    const settings = {
      epochs: o.epochs, learningRate: o['learning-rate'] ?? (o.full ? 3e-4 : SFT_DEFAULTS.learningRate), batchTokens: o['batch-tokens'],
      evalFraction: o['eval-fraction'], evalEvery: o['eval-every'], seed: o.seed, checkpointEvery: o['checkpoint-every'],
      schedule: o['lr-schedule'] as 'constant' | 'cosine', warmupSteps: o['warmup-steps'],
    };
    const rank = o['lora-rank'] ?? 16;
    const lora = o.full ? null : { rank, alpha: o['lora-alpha'] ?? 2 * rank, seed: settings.seed };
    const out = resolve(o.out!);
    const checkpointDir = resolve(o['checkpoint-dir'] ?? `${out}.checkpoint`);
    let parsed;
    try { parsed = readSftFile(data); } catch (e) { if (e instanceof SftDataError) throw new UsageError(e.message); throw e; }
    const { records, skipped } = parsed;

    const engine = await EmbeddedEngine.load(await modelDir(o.model), { threads: o.threads });
    try {
      const eosId = engine.tokenizer.eosToken !== null ? engine.tokenizer.tokenId(engine.tokenizer.eosToken) : undefined;
      const stopIds = [...new Set([...engine.info.eosTokenIds, ...(eosId !== undefined ? [eosId] : [])])];
      let examples;
      try {
        examples = encodeRecords(engine.tokenizer, records, { stopIds, maxTokens: engine.info.contextLength, vocabSize: engine.info.vocabSize, truncate: !o['no-truncate'] });
      } catch (e) {
        if (e instanceof SftDataError) throw new UsageError(`${data}:${e.message.replace(/^line /, '')}`);
        throw e;
      }
      const truncated = examples.filter((e) => e.truncated).length;
      const lossTokens = examples.reduce((a, e) => a + e.mask.reduce((x, m) => x + m, 0), 0);
      process.stderr.write(`${examples.length} examples (${lossTokens} assistant tokens) from ${data}` +
        `${skipped ? `, ${skipped} unfinished turns skipped` : ''}${truncated ? `, ${truncated} cut to the context of ${engine.info.contextLength} tokens` : ''}\n`);
      process.stderr.write(`training ${lora ? `a LoRA adapter (rank ${lora.rank}, alpha ${lora.alpha})` : 'every weight (full-parameter)'} on ${engine.info.modelId}, ` +
        `${settings.epochs} epoch(s), learning rate ${settings.learningRate}, ~${settings.batchTokens} tokens per step\n`);
      await engine.configureTraining(lora);
      if (o.resume && !existsSync(join(checkpointDir, 'sft_position.json'))) process.stderr.write(`--resume: no checkpoint in ${checkpointDir} yet; starting from the beginning\n`);
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
  },
});

export const mergeCommand = defineCommand({
  name: 'merge',
  summary: 'merge a LoRA adapter into full weights, written as a Hugging Face model folder',
  options: {
    model: modelOption,
    adapter: opt.dir('a PEFT LoRA adapter folder', { contains: 'adapter_config.json' }),
    out: opt.path('where the merged Hugging Face model folder goes', { placeholder: 'DIR' }),
  },
  check: (o) => {
    if (o.adapter === undefined) throw new UsageError('--adapter DIR is required (a PEFT LoRA adapter folder)');
    if (o.out === undefined) throw new UsageError('--out DIR is required (where the merged Hugging Face model folder goes)');
  },
  examples: ['openclaw-rl merge --model DIR --adapter my-adapter --out my-model'],
  run: async (o) => {
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const engine = await EmbeddedEngine.load(await modelDir(o.model));
    try {
      const version = await engine.loadAdapter(o.adapter!);
      await engine.saveModel(o.out!, version);
      process.stderr.write(`wrote ${resolve(o.out!)}: ${engine.info.modelId} with ${o.adapter} merged in\n`);
    } finally {
      await engine.close();
    }
  },
});
