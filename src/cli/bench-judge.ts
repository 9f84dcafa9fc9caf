// `openclaw-rl bench judge`: how the self judge reads replies it was never shown (src/bench/judge-wordings.ts).
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineCommand, opt, UsageError } from './command.ts';
import { jsonOption } from './args.ts';
import { NO_HINT_RULES_HELP, SELF_JUDGE_VOTES, SELF_JUDGE_WORD_RULE } from '../judge/config.ts';
import { WORD_RULES } from '../judge/judge.ts';
import { PERSONAS_DIR } from './bench.ts';

const log = (line: string) => process.stderr.write(`bench judge: ${line}\n`);
const JUDGE_SETS_DIR = fileURLToPath(new URL('../../personas/judge/', import.meta.url));

export const benchJudgeCommand = defineCommand({
  name: 'bench judge',
  summary: 'sign agreement of the self judge on replies it was never shown (hand-written sets and the personas\' feedback)',
  description: 'Each reply is judged after its story (praise after a story with the topic, a complaint after one without; for a persona with a length rule a short and a long story, with an avoid rule a cheerful and a sad one) '
    + '--reps times by the self judge as `serve` runs it; reports the share with the right sign, the share with the wrong sign '
    + '(what trains the wrong way) and the replies it misread. Default: every set in personas/judge/ and the feedback of every '
    + 'chat persona under personas/ and personas/blind/.',
  options: {
    model: opt.dir('the chat model folder', { contains: 'config.json', defaultText: '$OPENCLAW_RL_CACHE/models/stories260k-chat', placeholder: 'DIR' }),
    wordings: opt.list('a wording-set file (JSON array of {topic, with, without, satisfied[], unsatisfied[]})', { placeholder: 'FILE' }),
    'persona-file': opt.list('a persona whose feedback to judge (its rule asks for a word, a length or words to avoid)', { placeholder: 'FILE' }),
    reps: opt.int('judgements of each reply', { min: 1, default: 3 }),
    votes: opt.int('self-judge votes per judgement', { min: 1, default: SELF_JUDGE_VOTES }),
    'no-judge-hint-rules': opt.flag(NO_HINT_RULES_HELP),
    'word-rule': opt.choice([...WORD_RULES], 'what the reply\'s own words decide (off: the votes alone; veto: praise-only words are never −1; decide: praise-only words are +1 and complaint-only words −1 unless the hint votes found the opposite, and a reply that moves on to a new request is not a correction)', { defaultText: SELF_JUDGE_WORD_RULE }),
    json: jsonOption,
  },
  run: async (o) => {
    const { defaultChatModelDir } = await import('../recipes/chat-model/build.ts');
    const { parseWordingSets, personaWordingSets, judgeWordings, WordingSetError } = await import('../bench/judge-wordings.ts');
    const { loadPersona } = await import('../bench/persona.ts');
    const model = o.model ?? defaultChatModelDir();
    if (!existsSync(join(model, 'config.json'))) throw new UsageError(`no chat model at ${model}: build it with \`npm run make:chat-model\` or pass --model DIR`);
    const given = o.wordings.length > 0 || o['persona-file'].length > 0;
    const files = given ? o.wordings : readdirSync(JUDGE_SETS_DIR).filter((f) => f.endsWith('.json')).sort().map((f) => join(JUDGE_SETS_DIR, f));
    const personaFiles = given ? o['persona-file'] : [PERSONAS_DIR, join(PERSONAS_DIR, 'blind')].flatMap((d) => readdirSync(d).filter((f) => f.startsWith('chat-') && f.endsWith('.json')).sort().map((f) => join(d, f)));
    const sets = [];
    for (const f of files) {
      let json: unknown;
      try { json = JSON.parse(readFileSync(f, 'utf8')); } catch (e) { throw new UsageError(`${f}: ${(e as Error).message}`); }
      try { sets.push(...parseWordingSets(json, f)); } catch (e) { throw new UsageError((e as Error).message); }
    }
    try {
      const personas = personaWordingSets(personaFiles.map((file) => ({ file, persona: loadPersona(file) })), given);
      sets.push(...personas.sets);
      if (personas.skipped.length) log(`skipped ${personas.skipped.join(', ')}: a rule that asks for no word has no topic to write the stories around`);
    } catch (e) { throw e instanceof WordingSetError ? new UsageError(e.message) : e; }
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const { createJudge, JUDGE_DEFAULTS } = await import('../judge/config.ts');
    const engine = await EmbeddedEngine.load(model);
    try {
      const judge = createJudge({ ...JUDGE_DEFAULTS, kind: 'self', votes: o.votes, temperature: 0.6, maxTokens: 48, hintRules: !o['no-judge-hint-rules'], wordRule: o['word-rule'] }, engine)!;
      log(`${sets.length} sets, ${sets.reduce((n, s) => n + s.satisfied.length + s.unsatisfied.length, 0)} replies, ${o.reps} judgements each, ${o.votes} votes a judgement`);
      const r = await judgeWordings(judge, sets, o.reps, log);
      const pct = (x: number | null) => `${((x ?? 0) * 100).toFixed(1)}%`;
      log(`all: sign agreement ${pct(r.all.signAgreement)}, wrong sign ${pct(r.wrongSign)} of ${r.judgements} judgements (${r.seconds} s)`);
      for (const m of r.misread.slice(0, 15)) log(`  ${m.satisfied ? 'praise   ' : 'complaint'} [${m.scores.join(',')}] ${m.topic}: ${JSON.stringify(m.reply)}`);
      if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
    } finally {
      await engine.close();
    }
  },
});
