// `openclaw-rl generate` and `openclaw-rl score`: the engine from the command line.
import { defineCommand, opt, UsageError } from './command.ts';
import { idList, modelDir, modelOption, kernelOption, threadsOption, jsonOption, weightsDtypeOption } from './args.ts';
import type { ChatMessage } from '../engine/types.ts';
import type { KernelName } from '../engine/embedded/kernels/kernel.ts';
import type { WeightsDtype } from '../engine/embedded/kernels/packed.ts';

const common = {
  model: modelOption,
  adapter: opt.dir('a PEFT LoRA adapter folder used on top of the model (e.g. <data-dir>/checkpoints/latest)', { contains: 'adapter_config.json' }),
  kernel: kernelOption,
  'weights-dtype': weightsDtypeOption,
  threads: threadsOption,
  json: jsonOption,
};

function parseMessages(raw: string, source: string): ChatMessage[] {
  let messages: unknown;
  try { messages = JSON.parse(raw); } catch (e) { throw new UsageError(`${source} is not valid JSON: ${(e as Error).message}`); }
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every((m) => m && typeof m === 'object' && typeof m.role === 'string')) {
    throw new UsageError(`${source} must be a non-empty JSON array of {role, content}`);
  }
  return messages as ChatMessage[];
}

async function loadEngine(o: { model?: string; adapter?: string; kernel?: KernelName; threads?: number; 'weights-dtype'?: WeightsDtype }) {
  const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
  const engine = await EmbeddedEngine.load(await modelDir(o.model), { kernel: o.kernel, threads: o.threads, weightsDtype: o['weights-dtype'] });
  try {
    if (o.adapter) await engine.publish(await engine.loadAdapter(o.adapter));
  } catch (e) {
    await engine.close();
    throw e;
  }
  return engine;
}

export const generateCommand = defineCommand({
  name: 'generate',
  summary: 'sample a completion from raw text or chat messages, with exact per-token log-probs',
  options: {
    ...common,
    prompt: opt.string('raw text to continue (no chat template)'),
    messages: opt.custom('chat messages as a JSON array of {role, content}, rendered with the chat template', 'JSON', parseMessages),
    'max-tokens': opt.int('most tokens to generate', { min: 1, default: 256 }),
    temperature: opt.number('sampling temperature (0 is greedy)', { min: 0, default: 1 }),
    'top-p': opt.number('nucleus sampling mass', { gt: 0, max: 1, default: 1 }),
    'top-k': opt.int('sample among the K likeliest tokens (0 is all)', { min: 0, default: 0 }),
    seed: opt.int('random seed, for reproducible samples'),
    stop: opt.list('stop when this text appears'),
  },
  check: (o) => {
    if ((o.prompt === undefined) === (o.messages === undefined)) throw new UsageError('give exactly one of --prompt TEXT (raw text) or --messages JSON (chat messages, rendered with the chat template)');
  },
  examples: [`openclaw-rl generate --model DIR --prompt 'Once upon a time' --temperature 0 --max-tokens 40`,
    `openclaw-rl generate --model DIR --adapter .openclaw-rl/checkpoints/latest --messages '[{"role":"user","content":"hi"}]' --json`],
  run: async (o) => {
    const engine = await loadEngine(o);
    try {
      const promptIds = o.messages !== undefined ? engine.tokenizer.encodeChat(o.messages) : engine.tokenizer.encode(o.prompt!);
      const params = { maxTokens: o['max-tokens'], temperature: o.temperature, topP: o['top-p'], topK: o['top-k'], seed: o.seed, stop: o.stop.length ? o.stop : undefined };
      for await (const ev of engine.sample(promptIds, params)) {
        if (ev.type === 'token') { if (!o.json) process.stdout.write(ev.token.text); continue; }
        const r = ev.result;
        if (o.json) {
          process.stdout.write(JSON.stringify({ ids: r.ids, tokens: r.ids.map((id) => engine.tokenizer.tokenText(id)), logprobs: r.logprobs, text: r.text, finishReason: r.finishReason }) + '\n');
        } else {
          process.stdout.write('\n');
          process.stderr.write(`[${r.ids.length} tokens, finish: ${r.finishReason}, prompt ${r.promptTokens} tokens]\n`);
        }
      }
    } finally {
      await engine.close();
    }
  },
});

const ids = (help: string) => opt.custom(help, '1,2,3', idList);

export const scoreCommand = defineCommand({
  name: 'score',
  summary: 'log-probability of each response token given a prompt (text or exact token ids)',
  options: {
    ...common,
    prompt: opt.string('the prompt as text'),
    response: opt.string('the response as text'),
    'prompt-ids': ids('the prompt as comma-separated token ids (scored exactly, no re-tokenization)'),
    'response-ids': ids('the response as comma-separated token ids'),
    temperature: opt.number('temperature the log-probs are taken at', { gt: 0, default: 1 }),
  },
  check: (o) => {
    const byText = o.prompt !== undefined && o.response !== undefined;
    const byIds = o['prompt-ids'] !== undefined && o['response-ids'] !== undefined;
    if (byText === byIds) throw new UsageError('give either --prompt TEXT --response TEXT, or --prompt-ids 1,2,3 --response-ids 4,5');
  },
  run: async (o) => {
    const engine = await loadEngine(o);
    try {
      let promptIds: number[], responseIds: number[];
      if (o['prompt-ids'] && o['response-ids']) {
        // ids are scored exactly as given: no re-tokenization
        promptIds = o['prompt-ids'];
        responseIds = o['response-ids'];
      } else {
        // the response's ids are those the joined text adds after the prompt's, when the prompt's
        // ids are a prefix of the joined text's (the usual case); else the response is encoded alone
        promptIds = engine.tokenizer.encode(o.prompt!);
        const joined = engine.tokenizer.encode(o.prompt! + o.response!);
        const isPrefix = promptIds.every((id, i) => joined[i] === id);
        responseIds = isPrefix ? joined.slice(promptIds.length) : engine.tokenizer.encode(o.response!, false);
      }
      const [logprobs] = await engine.score([{ promptIds, responseIds }], { temperature: o.temperature });
      const out = { ids: responseIds, logprobs: Array.from(logprobs) };
      if (o.json) process.stdout.write(JSON.stringify(out) + '\n');
      else {
        for (let i = 0; i < responseIds.length; i++) process.stdout.write(`${String(responseIds[i]).padStart(7)}  ${logprobs[i].toFixed(5).padStart(10)}  ${JSON.stringify(engine.tokenizer.tokenText(responseIds[i]))}\n`);
        process.stdout.write(`total ${out.logprobs.reduce((a, b) => a + b, 0).toFixed(4)} nats over ${responseIds.length} tokens\n`);
      }
    } finally {
      await engine.close();
    }
  },
});
