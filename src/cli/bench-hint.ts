// `openclaw-rl bench hint`: how the model reads a persona's hint, the OPD teacher's side of learning it (src/bench/hint-reading.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { defineCommand, opt, UsageError } from './command.ts';
import { jsonOption } from './args.ts';
import { personaFrom } from './bench.ts';

const log = (line: string) => process.stderr.write(`bench hint: ${line}\n`);

export const benchHintCommand = defineCommand({
  name: 'bench hint',
  summary: 'how the model reads a persona\'s hint: its answers with the hint, scored as the personalization benchmark scores the policy\'s',
  description: 'The OPD teacher is the model answering a request with a hint appended, and distillation moves the policy towards '
    + 'its answers: a preference the teacher does not meet, or meets only in text the base finds unlikely, cannot be distilled '
    + 'fluently. The base weights answer the persona\'s held-out requests without a hint, with its stated preference as the hint, '
    + 'and with every --hint, --k times each at the evaluation\'s seeds, and each answer is scored as `bench personalize` scores '
    + 'the policy\'s (satisfied, fluent by the base\'s band, satisfied-and-fluent). The row without a hint is the base\'s own '
    + 'evaluation.',
  options: {
    model: opt.dir('the chat model folder', { contains: 'config.json', defaultText: '$OPENCLAW_RL_CACHE/models/stories260k-chat', placeholder: 'DIR' }),
    persona: opt.string('a shipped persona', { placeholder: 'NAME', nonEmpty: true, defaultText: 'chat-dog-lover' }),
    'persona-file': opt.file('a persona of your own (JSON, see personas/)'),
    hint: opt.list('another hint to read, as the self judge would write it', { placeholder: 'TEXT' }),
    k: opt.int('answers per held-out request and hint', { min: 1, default: 30 }),
    json: jsonOption,
  },
  run: async (o) => {
    const { defaultChatModelDir } = await import('../recipes/chat-model/build.ts');
    const model = o.model ?? defaultChatModelDir();
    if (!existsSync(join(model, 'config.json'))) throw new UsageError(`no chat model at ${model}: build it with \`npm run make:chat-model\` or pass --model DIR`);
    if (o.persona !== undefined && o['persona-file']) throw new UsageError('--persona and --persona-file both name a persona: give one');
    const { PersonaError } = await import('../bench/persona.ts');
    let persona;
    // personaFrom refuses a name that is not shipped (a usage error); a persona file that does not validate is one too
    try { persona = await personaFrom(o['persona-file'], o.persona ?? 'chat-dog-lover'); } catch (e) { if (e instanceof PersonaError) throw new UsageError(e.message); throw e; }
    if (o.hint.some((h) => !h.trim())) throw new UsageError('--hint must not be empty');
    const hints = [null, ...(persona.preference ? [persona.preference] : []), ...o.hint.filter((h) => h !== persona.preference)];
    if (hints.length === 1) throw new UsageError(`${persona.name} states no preference ("preference" in its file): give the hint to read with --hint TEXT`);
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const { calibrateFluencyCached } = await import('../bench/evaluate.ts');
    const { readHints } = await import('../bench/hint-reading.ts');
    const engine = await EmbeddedEngine.load(model);
    try {
      if (!engine.tokenizer.chatTemplate) log('this model has no chat template: the hint reaches it as plain text, as it would the OPD teacher');
      log(`${persona.name}: ${persona.heldOutPrompts.length} held-out requests × ${o.k} answers, ${hints.length} row(s); calibrating fluency on the base's own answers…`);
      const bands = await calibrateFluencyCached(engine, model, persona, o.k);
      const r = await readHints(engine, persona, bands, hints, o.k, log);
      log(`done in ${r.seconds} s`);
      if (o.json) process.stdout.write(JSON.stringify({ ...r, fluencyBand: bands.plain, preferenceBand: bands.preference }) + '\n');
    } finally {
      await engine.close();
    }
  },
});
