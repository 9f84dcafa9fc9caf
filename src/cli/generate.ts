// `openclaw-rl generate` and `openclaw-rl score`: the engine from the command line.
import { parseArgs } from 'node:util';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import type { ChatMessage } from '../engine/types.ts';
import type { KernelName } from '../engine/embedded/kernels/kernel.ts';
import { UsageError, num, idList, modelDir } from './args.ts';

const common = {
  model: { type: 'string' },
  adapter: { type: 'string' },
  json: { type: 'boolean', default: false },
  kernel: { type: 'string' },
  threads: { type: 'string' },
} as const;

function kernelOpt(v: string | undefined): KernelName | undefined {
  if (v === undefined) return undefined;
  if (v !== 'wasm' && v !== 'ts') throw new UsageError(`--kernel must be 'wasm' or 'ts', got '${v}'`);
  return v;
}

export async function generateCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args: argv, strict: true,
    options: {
      ...common, prompt: { type: 'string' }, messages: { type: 'string' },
      'max-tokens': { type: 'string' }, temperature: { type: 'string' }, 'top-p': { type: 'string' }, 'top-k': { type: 'string' },
      seed: { type: 'string' }, stop: { type: 'string', multiple: true },
    },
  });
  if ((o.prompt === undefined) === (o.messages === undefined)) throw new UsageError('give exactly one of --prompt TEXT (raw text) or --messages JSON (chat messages, rendered with the chat template)');
  const engine = await EmbeddedEngine.load(await modelDir(o.model), { kernel: kernelOpt(o.kernel), threads: o.threads ? num(o.threads, '--threads', 1, (x) => x >= 1) : undefined });
  try {
    if (o.adapter) await engine.publish(await engine.loadAdapter(o.adapter));
    let promptIds: number[];
    if (o.messages !== undefined) {
      let messages: ChatMessage[];
      try { messages = JSON.parse(o.messages); } catch (e) { throw new UsageError(`--messages is not valid JSON: ${(e as Error).message}`); }
      if (!Array.isArray(messages) || messages.length === 0) throw new UsageError('--messages must be a non-empty JSON array of {role, content}');
      promptIds = engine.tokenizer.encodeChat(messages);
    } else {
      promptIds = engine.tokenizer.encode(o.prompt!);
    }
    const params = {
      maxTokens: num(o['max-tokens'], '--max-tokens', 256, (x) => Number.isInteger(x) && x >= 1),
      temperature: num(o.temperature, '--temperature', 1, (x) => x >= 0),
      topP: num(o['top-p'], '--top-p', 1, (x) => x > 0 && x <= 1),
      topK: num(o['top-k'], '--top-k', 0, (x) => Number.isInteger(x) && x >= 0),
      seed: o.seed !== undefined ? num(o.seed, '--seed', 0, Number.isInteger) : undefined,
      stop: o.stop,
    };
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
}

export async function scoreCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args: argv, strict: true,
    options: { ...common, prompt: { type: 'string' }, response: { type: 'string' }, 'prompt-ids': { type: 'string' }, 'response-ids': { type: 'string' }, temperature: { type: 'string' } },
  });
  const byText = o.prompt !== undefined && o.response !== undefined;
  const byIds = o['prompt-ids'] !== undefined && o['response-ids'] !== undefined;
  if (byText === byIds) throw new UsageError('give either --prompt TEXT --response TEXT, or --prompt-ids 1,2,3 --response-ids 4,5');
  const engine = await EmbeddedEngine.load(await modelDir(o.model), { kernel: kernelOpt(o.kernel) });
  try {
    if (o.adapter) await engine.publish(await engine.loadAdapter(o.adapter));
    let promptIds: number[], responseIds: number[];
    if (byIds) {
      // ids are scored exactly as given: no re-tokenization
      promptIds = idList(o['prompt-ids']!, '--prompt-ids');
      responseIds = idList(o['response-ids']!, '--response-ids');
    } else {
      // the response's ids are those the joined text adds after the prompt's, when the prompt's
      // ids are a prefix of the joined text's (the usual case); else the response is encoded alone
      promptIds = engine.tokenizer.encode(o.prompt!);
      const joined = engine.tokenizer.encode(o.prompt! + o.response!);
      const isPrefix = promptIds.every((id, i) => joined[i] === id);
      responseIds = isPrefix ? joined.slice(promptIds.length) : engine.tokenizer.encode(o.response!, false);
    }
    const [logprobs] = await engine.score([{ promptIds, responseIds }], { temperature: num(o.temperature, '--temperature', 1, (x) => x > 0) });
    const out = { ids: responseIds, logprobs: Array.from(logprobs) };
    if (o.json) process.stdout.write(JSON.stringify(out) + '\n');
    else {
      for (let i = 0; i < responseIds.length; i++) process.stdout.write(`${String(responseIds[i]).padStart(7)}  ${logprobs[i].toFixed(5).padStart(10)}  ${JSON.stringify(engine.tokenizer.tokenText(responseIds[i]))}\n`);
      process.stdout.write(`total ${out.logprobs.reduce((a, b) => a + b, 0).toFixed(4)} nats over ${responseIds.length} tokens\n`);
    }
  } finally {
    await engine.close();
  }
}
