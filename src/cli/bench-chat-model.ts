// `openclaw-rl bench chat-model`: the acceptance measurements of stories260k-chat (src/bench/chat-model.ts)
// on held-out phrasings, beside the base model.
import { join } from 'node:path';
import { defineCommand, opt, UsageError } from './command.ts';
import { jsonOption } from './args.ts';

const log = (line: string) => process.stderr.write(`bench chat-model: ${line}\n`);

export const benchChatModelCommand = defineCommand({
  name: 'bench chat-model',
  summary: 'topic following (taught and never-taught nouns), hint effect, self-judge agreement and tool use of stories260k-chat on held-out phrasings',
  description: 'Measures a chat model built by `npm run make:chat-model` (docs/chat-model.md) on phrasings the recipe never trained on, '
    + 'beside the base model it was built from.',
  options: {
    model: opt.dir('the chat model folder', { contains: 'config.json', defaultText: '$OPENCLAW_RL_CACHE/models/stories260k-chat', placeholder: 'DIR' }),
    base: opt.dir('the base model it was built from', { contains: 'config.json', defaultText: "the manifest's base model", placeholder: 'DIR' }),
    seed: opt.int('seed of the benchmark cases and samples', { min: 0, default: 7 }),
    quick: opt.flag('a smaller run (fewer prompts, one judge vote): a smoke test'),
    'no-judge-hint-rules': opt.flag('measure the self judge without its hint rules (grounded hints; hints naming what the answer lacks make the turn −1, what it already has +1)'),
    json: jsonOption,
  },
  run: async (o) => {
    const { defaultChatModelDir, readManifest } = await import('../recipes/chat-model/build.ts');
    const model = o.model ?? defaultChatModelDir();
    const manifest = readManifest(model);
    if (!manifest && !o.model) throw new UsageError(`no chat model at ${model}: build it with \`npm run make:chat-model\` or pass --model DIR`);
    const base = o.base ?? manifest?.base.dir;
    if (!base) throw new UsageError(`${join(model, 'manifest.json')} does not name the base model: pass --base DIR`);
    const { benchChatModel } = await import('../bench/chat-model.ts');
    const r = await benchChatModel({ model, base, seed: o.seed, quick: o.quick, hintRules: !o['no-judge-hint-rules'], log });
    log(`done in ${r.seconds} s`);
    if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
  },
});
