// The self judge on feedback worded in ways the chat-model recipe never trained on: the persona files'
// feedback (each satisfied phrase after a story that has the persona's topic, each unsatisfied one after a
// story without it) and the recipe's held-out corrections without a "no" (preferences, wishes, absences;
// and corrections after soft praise) and held-out praise, over six topics. Stories are the base model's own, drawn
// afresh (a seed the recipe does not use). The real judge path: PrmJudge over SelfBackend, compact
// prompts, m votes at T = 0.6, as `serve` runs it. Sign agreement per group on stdout; then, on the personas'
// feedback, the hints top-K OPD would take as teachers when 1, 2 or 3 hint votes must give a hint: how many name
// what the persona asks for (its topic or name) and how many name something else. One JSON line last.
// --dump FILE writes every case with its votes (one JSON object per line) for study apart from the run.
// --persona-dir DIR reads the personas (every chat-*.json) from there instead of personas/: personas/blind/ holds ones
// written apart from the recipe, by someone who never read its phrasings.
//   node bench/judge-feedback.ts [--model DIR] [--base DIR] [--votes 7] [--reps 6] [--seed 4242] [--dump FILE] [--no-hint-rules] [--temperature 0.6] [--persona-dir DIR]
import { parseArgs } from 'node:util';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../src/engine/embedded/engine.ts';
import { createJudge, JUDGE_DEFAULTS } from '../src/judge/config.ts';
import { drawStoryPool, mentionsTopic, mentionsName } from '../src/recipes/chat-model/stories.ts';
import { Rng } from '../src/engine/embedded/rng.ts';
import { TOPICS, fill, phrasingSets } from '../src/recipes/chat-model/phrasings.ts';
import { acceptedHints, hintAgreement, hintVoteOf } from '../src/learn/votes.ts';

const root = join(import.meta.dirname, '..');
const { values } = parseArgs({ options: {
  model: { type: 'string', default: join(homedir(), '.cache', 'openclaw-rl', 'models', 'stories260k-chat') },
  base: { type: 'string', default: join(root, '..', 'shared', 'models', 'stories260k-hf') },
  votes: { type: 'string', default: '7' }, reps: { type: 'string', default: '6' }, seed: { type: 'string', default: '4242' },
  dump: { type: 'string' },
  'no-hint-rules': { type: 'boolean', default: false },
  temperature: { type: 'string', default: '0.6' },
  'persona-dir': { type: 'string', default: join(root, 'personas') },
} });
const votes = Number(values.votes), reps = Number(values.reps), seed = Number(values.seed);

const personaDir = values['persona-dir']!;
const personas = readdirSync(personaDir).filter((f) => f.startsWith('chat-') && f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(personaDir, f), 'utf8')) as { name: string; satisfied: { includes?: string[] }; feedback: { satisfied: string[]; unsatisfied: string[] } });
// the base model only writes the stories
const base = await EmbeddedEngine.load(values.base!);
const pool = await drawStoryPool(base, { seed, free: 120, perTopic: 6, perName: 2, topicNames: 2, maxTokens: 110, maxWords: 45, temperature: 0.8 }).finally(() => base.close());
const chat = await EmbeddedEngine.load(values.model!);
const judge = createJudge({ ...JUDGE_DEFAULTS, kind: 'self', votes, temperature: Number(values.temperature), maxTokens: 48, hintRules: !values['no-hint-rules'] }, chat)!;
const rng = new Rng(seed + 1);
const pick = <T,>(xs: readonly T[]) => xs[Math.floor(rng.next() * xs.length)];
const storyWithout = (t: string, has = mentionsTopic) => { for (let i = 0; i < 200; i++) { const s = pick(pool.free); if (!has(s, t)) return s; } throw new Error(`no story without ${t}`); };

interface Case { group: string; phrase: string; satisfied: boolean; story: string; text: string; asks?: string }
const cases: Case[] = [];
for (const p of personas) {
  const topic = TOPICS.find((t) => p.satisfied.includes?.includes(t)), asks = topic ?? p.satisfied.includes?.[0];
  for (const satisfied of [true, false]) for (const phrase of p.feedback[satisfied ? 'satisfied' : 'unsatisfied']) for (let r = 0; r < reps; r++) {
    // a topic persona's stories have the topic or not; a name persona's (named-hero) have the name or not
    const story = topic ? (satisfied ? pick(pool.byTopic[topic]) : storyWithout(topic))
      : satisfied ? pick(pool.byName[asks!]) : storyWithout(asks!, mentionsName);
    cases.push({ group: p.name, phrase, satisfied, story, text: phrase, asks });
  }
}
const sets = phrasingSets();
const topics = ['dog', 'bear', 'frog', 'cake', 'boat', 'bunny'];
const heldOut: [group: string, phrases: string[], satisfied: boolean][] = [
  ['held-out implicit corrections', sets.implicitCorrections.heldOut, false],
  ['held-out soft corrections', sets.softCorrections.heldOut, false],
  ['held-out praise', sets.positive.heldOut, true],
];
// a new request after the answer, worded here and nowhere in the recipe: the judge prompts call moving on a sign
// that the answer worked; a persona that wants {t} in every story would call it a correction. Reported, not scored.
const MOVING_ON = ['Thanks! Now a story about a {t}, please.', 'Nice. Next, tell me one about a {t}.', 'Good. Now I want a story about a {t}.',
  'Great! Can you do a {t} story next?', 'Thank you. Now one with a {t}.', 'Lovely. Next up: a {t} story.'];
for (const [group, phrases, satisfied] of heldOut) {
  // the same number of cases per group whatever the set's size: reps × 6 topics × 6 phrasings drawn from it
  for (let i = 0; i < reps * 36; i++) {
    const t = topics[i % topics.length], phrase = pick(phrases);
    cases.push({ group, phrase, satisfied, story: satisfied ? pick(pool.free) : storyWithout(t), text: fill(phrase, { t }) });
  }
}

// praise that names a quality rather than a thing in the story, worded here and nowhere in the recipe: a hint from
// it ("The user wants cheerful stories.") asks for a word the story need not contain
const QUALITY_PRAISE = ['So cheerful, I loved it!', 'Nice and short, thank you.', 'That was funny, more please.', 'Such a sweet story! Another?',
  'Lovely and calm. One more?', 'Very exciting, thanks!', 'Cute and gentle, my son loved it.', 'Perfectly cosy. Tell me another.'];
for (let i = 0; i < reps * 36; i++) { const phrase = pick(QUALITY_PRAISE); cases.push({ group: 'praise naming a quality', phrase, satisfied: true, story: pick(pool.free), text: phrase }); }
for (let i = 0; i < reps * 36; i++) {
  const t = topics[i % topics.length], phrase = pick(MOVING_ON);
  cases.push({ group: 'moving on (new request)', phrase, satisfied: true, story: storyWithout(t), text: fill(phrase, { t }) });
}

const started = performance.now();
const results = await Promise.all(cases.map((c) => judge.judge({ response: c.story, nextState: { role: 'user', text: c.text, looksLikeError: false } }, { hints: true })));
if (values.dump) writeFileSync(values.dump, cases.map((c, i) => JSON.stringify({ ...c, score: results[i].score, votes: results[i].votes.map((v) => ({ kind: v.kind, score: v.score, hint: v.hint, dropped: v.dropped })), rule: results[i].rule })).join('\n') + '\n');
const groups = new Map<string, { cases: number; agree: number; satisfied: [number, number]; unsatisfied: [number, number] }>();
const misses = new Map<string, number>();
results.forEach((j, i) => {
  const c = cases[i];
  const ok = c.satisfied ? j.score > 0 : j.score < 0;
  const g = groups.get(c.group) ?? { cases: 0, agree: 0, satisfied: [0, 0], unsatisfied: [0, 0] };
  groups.set(c.group, g);
  g.cases++; if (ok) g.agree++;
  const side = c.satisfied ? g.satisfied : g.unsatisfied; side[1]++; if (ok) side[0]++;
  const miss = `${c.group} ${c.satisfied ? '+' : '−'} ${c.phrase}`;
  if (!ok) misses.set(miss, (misses.get(miss) ?? 0) + 1);
});
// the hints a turn would hand top-K OPD (≤ 3) when minVotes hint votes must agree, on the personas' feedback
const hintRows = [1, 2, 3].map((minVotes) => {
  let hints = 0, wrong = 0, complaints = 0, complaintsRight = 0, complaintsWrong = 0;
  results.forEach((j, i) => {
    const c = cases[i];
    if (!c.asks) return;
    const votes = j.votes.filter((v) => v.kind === 'hint').map(hintVoteOf);
    const agreed = hintAgreement(votes, minVotes);
    const names = (h: string) => new RegExp(`\\b${c.asks}s?\\b`, 'i').test(h);
    const accepted = acceptedHints(votes.filter((_, k) => agreed[k]), 3);
    hints += accepted.length; wrong += accepted.filter((h) => !names(h)).length;
    if (!c.satisfied) { complaints++; if (accepted.some(names)) complaintsRight++; if (accepted.some((h) => !names(h))) complaintsWrong++; }
  });
  return { minVotes, hints, wrong, complaints, complaintsWithRightHint: complaintsRight, complaintsWithWrongHint: complaintsWrong };
});
const pct = (a: number, n: number) => (n ? Math.round((1000 * a) / n) / 10 : null);
const out = Object.fromEntries([...groups].map(([k, g]) => [k, { cases: g.cases, agreement: pct(g.agree, g.cases), satisfied: pct(...g.satisfied), unsatisfied: pct(...g.unsatisfied) }]));
for (const [k, g] of Object.entries(out)) console.log(`${k.padEnd(30)} ${String(g.agreement).padStart(5)}%  (satisfied ${g.satisfied ?? '–'}%, unsatisfied ${g.unsatisfied ?? '–'}%, ${g.cases} cases)`);
const personaGroups = [...groups].filter(([k]) => k.startsWith('chat-'));
const personaAgree = personaGroups.reduce((a, [, g]) => a + g.agree, 0), personaCases = personaGroups.reduce((a, [, g]) => a + g.cases, 0);
console.log(`persona feedback overall ${pct(personaAgree, personaCases)}%; ${((performance.now() - started) / 1000).toFixed(0)} s`);
for (const r of hintRows) console.log(`hints when ${r.minVotes} vote(s) must give one: ${r.hints} accepted, ${r.wrong} name something the persona did not ask for; complaints with the right hint ${r.complaintsWithRightHint}/${r.complaints}, with a wrong one ${r.complaintsWithWrongHint}`);
for (const [k, n] of [...misses].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  missed ${n}×  ${k}`);
console.log(JSON.stringify({ model: values.model, votes, reps, seed, personaFeedback: pct(personaAgree, personaCases), groups: out, hints: hintRows }));
await chat.close();
process.exit(0);
