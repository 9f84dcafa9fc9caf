// The reference half of the Hugging Face compatibility check (scripts/peft-compat.py loads what this
// writes in transformers + peft and compares). Three kinds of output of the project:
//   adapter  a LoRA adapter trained on the embedded engine for a few PPO steps (so both A and B are
//            non-zero), written as a PEFT folder, with our per-token log-probs under base and adapter;
//   merged   `openclaw-rl merge` of that adapter: a full Hugging Face folder (same log-probs as the adapter);
//   full     `openclaw-rl sft --full` on a tiny generated chat file, from a chat-format copy of the model
//            (the chat model recipe's first step: ChatML tokens and template, tool calls): a full Hugging
//            Face folder, with our log-probs of chat sequences, our token ids of a few strings, and our
//            chat-template renderings (text and ids) of conversations with system, user, assistant and
//            tool messages.
//
//   node scripts/peft-compat.ts --model DIR --out OUTDIR [--rank 8] [--steps 3] [--threads 1]
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedEngine } from '../src/engine/embedded/engine.ts';
import { collect, type ChatMessage, type ToolSpec } from '../src/engine/types.ts';
import { addChatVocabulary } from '../src/recipes/chat-model/vocab.ts';

const { values } = parseArgs({
  options: { model: { type: 'string' }, out: { type: 'string' }, rank: { type: 'string', default: '8' }, steps: { type: 'string', default: '3' }, threads: { type: 'string', default: '1' } },
});
if (!values.model || !values.out) {
  process.stderr.write('usage: node scripts/peft-compat.ts --model DIR --out OUTDIR [--rank 8] [--steps 3] [--threads 1]\n');
  process.exit(2);
}
const model = resolve(values.model);
const out = resolve(values.out);
const threads = Number(values.threads);
mkdirSync(out, { recursive: true });
const cli = fileURLToPath(new URL('../bin/openclaw-rl.js', import.meta.url));
const runCli = (args: string[]) => execFileSync(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });

/** Our log-probs of every token after the first (null for the first, as it has no context). */
async function logprobs(engine: EmbeddedEngine, ids: number[], adapter: 'base' | number = 'base'): Promise<(number | null)[]> {
  return [null, ...Array.from((await engine.score([{ promptIds: [ids[0]], responseIds: ids.slice(1) }], { adapter }))[0])];
}

/** Strings whose ids are compared: spaces at the ends and doubled (normalizers differ there), newlines, digits, byte fallback. */
const TOKEN_STRINGS = [
  'Once upon a time', 'Hello ', '  two  spaces  ', 'line one\nline two\n', 'Numbers 12345 and 3.14', 'Émilie’s café 😀', '<s>inline</s> special',
];
const CHAT_TOKEN_STRINGS = ['<|im_start|>user\nHi<|im_end|>\n', 'call <tool_call>{"name": "calculator"}</tool_call> now', '[HINT_START]a hint[HINT_END]'];

const TOOLS: ToolSpec[] = [{
  type: 'function',
  function: {
    name: 'calculator', description: 'Evaluate an arithmetic expression.',
    parameters: { type: 'object', properties: { expression: { type: 'string' }, precision: { type: 'integer' } }, required: ['expression'] },
  },
}];
const NAMES = ['Max', 'Lily', 'Tom', 'Mia'];
const ANIMALS = ['dog', 'cat', 'bird', 'fish'];

/** Conversations as an OpenAI client sends them (tool-call arguments as JSON strings). */
function conversations(k: number): { messages: ChatMessage[]; tools?: ToolSpec[] }[] {
  const name = NAMES[k % NAMES.length], animal = ANIMALS[(k >> 1) % ANIMALS.length];
  const a = 11 + 7 * k, b = 23 + 5 * k;
  return [
    {
      messages: [
        { role: 'system', content: 'You tell short stories.' },
        { role: 'user', content: `Tell me a story about a ${animal}.` },
        { role: 'assistant', content: `Once upon a time, there was a little ${animal} named ${name}. ${name} liked to play in the park.` },
      ],
    },
    {
      messages: [
        { role: 'user', content: `Tell me a story with a hero named ${name}.` },
        { role: 'assistant', content: `${name} was a brave girl. One day, she found a big red ball.` },
        { role: 'user', content: 'Another one, please.' },
        { role: 'assistant', content: `${name} and her mom went to the shop. They bought a cake.` },
      ],
    },
    {
      tools: TOOLS,
      messages: [
        { role: 'system', content: 'Use the tools when they help.' },
        { role: 'user', content: `What is ${a} + ${b}?` },
        { role: 'assistant', content: null, tool_calls: [{ id: `call_${k}`, type: 'function', function: { name: 'calculator', arguments: JSON.stringify({ expression: `${a} + ${b}` }) } }] },
        { role: 'tool', tool_call_id: `call_${k}`, content: String(a + b) },
        { role: 'assistant', content: `${a} + ${b} = ${a + b}.` },
      ],
    },
    {
      tools: TOOLS,
      messages: [
        { role: 'user', content: `What are ${a} × 3 and ${b} ÷ 2?` },
        {
          role: 'assistant', content: '',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'calculator', arguments: JSON.stringify({ expression: `${a} × 3`, precision: 0 }) } },
            { id: 'c2', type: 'function', function: { name: 'calculator', arguments: { expression: `${b} ÷ 2`, precision: 1 } } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: String(a * 3) },
        { role: 'tool', tool_call_id: 'c2', content: String(b / 2) },
        { role: 'assistant', content: `${a * 3} and ${b / 2}.` },
      ],
    },
  ];
}

const engine = await EmbeddedEngine.load(model, { threads });
const reference: Record<string, unknown> = { model };
try {
  // 1. the LoRA adapter (PEFT folder)
  await engine.configureTraining({ rank: Number(values.rank), alpha: 2 * Number(values.rank), seed: 1 });
  const prompts = ['Once upon a time', 'The little dog', 'One day, Lily went to the park'];
  const samples = await Promise.all(prompts.map((p, i) => collect(engine.sample(engine.tokenizer.encode(p), { maxTokens: 24, temperature: 1, topP: 1, topK: 0, seed: i }))));
  const data = prompts.map((p, i) => ({ promptIds: engine.tokenizer.encode(p), responseIds: samples[i].ids, advantages: samples[i].ids.map((_, t) => (t % 2 ? 1 : -0.5)), behaviourLogprobs: samples[i].logprobs }));
  for (let s = 0; s < Number(values.steps); s++) {
    await engine.forwardBackward(data, { kind: 'ppo' });
    await engine.optimStep({ learningRate: 5e-3 });
  }
  const v = await engine.saveWeights();
  const adapter = join(out, 'adapter');
  await engine.saveAdapter(adapter, v);
  const sequences = [];
  for (const d of data) {
    const ids = [...d.promptIds, ...d.responseIds];
    sequences.push({ ids, base: await logprobs(engine, ids), adapted: await logprobs(engine, ids, v) });
  }
  Object.assign(reference, { adapter, sequences });
} finally {
  await engine.close();
}

// 2. `openclaw-rl merge`: the adapter merged into a full folder, which must score as the adapter did
const merged = join(out, 'merged');
runCli(['merge', '--model', model, '--adapter', join(out, 'adapter'), '--out', merged]);
const mergedEngine = await EmbeddedEngine.load(merged, { threads });
try {
  reference.merged = {
    dir: merged,
    tokens: TOKEN_STRINGS.flatMap((text) => [true, false].map((special) => ({ text, addSpecialTokens: special, ids: mergedEngine.tokenizer.encode(text, special) }))),
  };
} finally {
  await mergedEngine.close();
}

// 3. `openclaw-rl sft --full` on a chat-format copy of the model
const chatBase = join(out, 'chat-base');
rmSync(chatBase, { recursive: true, force: true });
addChatVocabulary(model, chatBase, 1);
const train = [0, 1, 2, 3].flatMap(conversations);
const heldOut = conversations(5);
writeFileSync(join(out, 'chats.jsonl'), train.map((c) => JSON.stringify(c)).join('\n') + '\n');
const full = join(out, 'full');
runCli(['sft', '--model', chatBase, '--data', join(out, 'chats.jsonl'), '--out', full, '--full', '--epochs', '3',
  '--learning-rate', '3e-3', '--eval-fraction', '0', '--batch-tokens', '1024', '--threads', String(threads)]);

const fullEngine = await EmbeddedEngine.load(full, { threads });
const baseEngine = await EmbeddedEngine.load(chatBase, { threads });
try {
  const tok = fullEngine.tokenizer;
  const chats = [];
  for (const c of [...train.slice(0, 4), ...heldOut]) {
    const last = c.messages.length - 1;
    // the whole conversation, and the prompt before its last assistant message with the generation prompt
    for (const [messages, addGenerationPrompt] of [[c.messages, false], [c.messages.slice(0, last), true]] as const) {
      const opts = { tools: c.tools, addGenerationPrompt };
      chats.push({ messages, tools: c.tools ?? null, addGenerationPrompt, text: tok.renderChat(messages, opts), ids: tok.encodeChat(messages, opts) });
    }
  }
  const sequences = [];
  for (const c of [...train.slice(0, 4), ...heldOut.slice(0, 2)]) {
    const ids = tok.encodeChat(c.messages, { tools: c.tools, addGenerationPrompt: false });
    sequences.push({ ids, trained: await logprobs(fullEngine, ids), base: await logprobs(baseEngine, ids) });
  }
  reference.full = {
    dir: full,
    eosTokenIds: fullEngine.info.eosTokenIds,
    specialTokens: { bos: tok.bosToken, eos: tok.eosToken },
    tokens: [...TOKEN_STRINGS, ...CHAT_TOKEN_STRINGS].flatMap((text) => [true, false].map((special) => ({ text, addSpecialTokens: special, ids: tok.encode(text, special) }))),
    chats,
    sequences,
  };
} finally {
  await Promise.all([fullEngine.close(), baseEngine.close()]);
}
writeFileSync(join(out, 'reference.json'), JSON.stringify(reference, null, 1) + '\n');
process.stderr.write(`wrote ${out}: adapter/, merged/, full/ and reference.json\n`);
