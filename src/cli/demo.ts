// `openclaw-rl demo`: a short, visible personalization session — the server, a simulated user who
// wants stories about a dog, the judge and the learning loop — with a live satisfaction line. With no
// --model it runs on stories260k-chat when that is built, with the defaults that follow the model.
import { resolve, join } from 'node:path';
import { existsSync } from 'node:fs';
import { defineCommand, opt, UsageError } from './command.ts';
import { personalizeOptions, personalizeRuns, checkPersonalize, resolvePersonalize } from './bench.ts';

/** --model, $OPENCLAW_RL_MODEL, else the built stories260k-chat. */
async function demoModel(model: string | undefined): Promise<string | undefined> {
  if (model) return undefined; // resolvePersonalize resolves it (a folder or a Hugging Face id)
  const { defaultChatModelDir } = await import('../recipes/chat-model/build.ts');
  const dir = defaultChatModelDir();
  if (existsSync(join(dir, 'config.json'))) return dir;
  throw new UsageError(`no model: the demo runs on stories260k-chat once it is built (${dir} has none; \`npm run make:chat-model\` builds it in ` +
    'about 10 minutes on 2 cores), or on a model you name: --model DIR (e.g. --model ../shared/models/stories260k-hf, a story model without chat)');
}

export const demoCommand = defineCommand({
  name: 'demo',
  summary: 'watch a simulated user teach the model what it likes (server, judge and training in one process)',
  description: 'A simulated user asks for stories and says what it thinks of each one; the server judges the replies, trains a ' +
    'LoRA adapter in the background and serves each new version, and the held-out satisfaction is printed as it rises.',
  options: {
    ...personalizeOptions({ conversations: 128, out: 'openclaw-rl-demo' }),
    model: opt.string('a local Hugging Face model folder or a Hugging Face model id',
      { env: 'OPENCLAW_RL_MODEL', placeholder: 'DIR|ID', nonEmpty: true, defaultText: 'the built stories260k-chat ($OPENCLAW_RL_CACHE/models/stories260k-chat)' }),
  },
  check: checkPersonalize,
  examples: ['openclaw-rl demo', 'openclaw-rl demo --model ../shared/models/stories260k-hf', 'openclaw-rl demo --persona chat-cat-lover --conversations 64'],
  run: async (o) => {
    const { writeReport } = await import('../bench/personalize.ts');
    process.stderr.write(`openclaw-rl demo: a simulated user asks for stories and says what it thinks of each one; the server judges\n` +
      `the replies, trains a LoRA adapter in the background and serves each new version. Watch the held-out satisfaction rise.\n\n`);
    const resolved = await resolvePersonalize(o, await demoModel(o.model));
    process.stderr.write(`model: ${resolved.model}\n`);
    const runs = await personalizeRuns(o, (line) => process.stderr.write(`${line}\n`), resolved);
    const files = await writeReport(resolve(o.out), runs);
    const r = runs[0];
    if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
    process.stderr.write(`\n${r.persona}: satisfaction ${(r.baseRate * 100).toFixed(0)}% → ${(r.finalRate * 100).toFixed(0)}%, satisfied-and-fluent ${(r.baseSatisfiedAndFluent * 100).toFixed(0)}% → ${(r.finalSatisfiedAndFluent * 100).toFixed(0)}%, KL to base ${r.finalKlToBase.toFixed(3)} after ${r.conversations} conversations (${r.steps} training steps, ${r.wallSeconds} s).\nPlot: ${files[2]}\n`);
  },
});
