// The judge-wordings benchmark's pieces: wording sets are checked as they are read, a persona becomes a set around its
// topic word, and every reply is judged `reps` times with its story and tallied (here with the lexical judge, which needs
// no model, so the expected verdicts are known).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseWordingSets, wordingSetOfPersona, personaWordingSets, judgeWordings, PERSONA_STORIES, RULE_STORIES, WordingSetError } from '../../src/bench/judge-wordings.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { loadPersona, type Persona } from '../../src/bench/persona.ts';

const set = { topic: 'duck', with: 'Lily saw a duck.', without: 'Tim went to the park.', satisfied: ['Thanks, perfect!', 'Hmm.'], unsatisfied: ['No, I wanted a duck.'] };

test('wording sets: a valid file reads as written; a bad one says where it is wrong', () => {
  assert.deepEqual(parseWordingSets([set], 'f.json'), [{ ...set, source: 'f.json' }]);
  const bad: [unknown, RegExp][] = [
    [[], /non-empty array of wording sets/],
    [{}, /non-empty array of wording sets/],
    [[{ ...set, topic: '' }], /f\.json\[0\]\.topic must be a non-empty string/],
    [[set, { ...set, satisfied: [] }], /f\.json\[1\]\.satisfied must be a non-empty array/],
    [[{ ...set, unsatisfied: ['ok', 3] }], /unsatisfied must be a non-empty array of non-empty strings/],
    [[{ ...set, without: undefined }], /without must be a non-empty string/],
  ];
  for (const [json, why] of bad) assert.throws(() => parseWordingSets(json, 'f.json'), (e: Error) => e instanceof WordingSetError && why.test(e.message));
});

test('every shipped wording set and chat persona reads as a set', () => {
  const dir = new URL('../../personas/judge/', import.meta.url);
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.json'))) assert.ok(parseWordingSets(JSON.parse(readFileSync(new URL(f, dir), 'utf8')), f).length > 0, f);
  const cat = wordingSetOfPersona(loadPersona(new URL('../../personas/chat-cat-lover.json', import.meta.url).pathname))!;
  assert.equal(cat.topic, 'cat');
  assert.equal(cat.with, PERSONA_STORIES.with('cat'));
  assert.ok(cat.with.includes('cat') && !/\bcat\b/.test(cat.without));
});

test('a length rule is judged after a short and a long story, an avoid rule after a cheerful and a sad one; stories on one side are no set', () => {
  const persona = (satisfied: unknown) => ({ ...loadPersona(new URL('../../personas/chat-short-stories.json', import.meta.url).pathname), satisfied } as Persona);
  const cases: [rule: unknown, topic: string | null, with_: string | null, without: string | null][] = [
    [{ maxWords: 20 }, 'at most 20 words', RULE_STORIES.short, RULE_STORIES.long],
    [{ maxWords: 40 }, 'at most 40 words', RULE_STORIES.short, RULE_STORIES.long],
    [{ maxWords: 12 }, null, null, null], // the short story is 19 words
    [{ maxWords: 80 }, null, null, null], // so is the long one under 80
    [{ minWords: 30 }, 'at least 30 words', RULE_STORIES.long, RULE_STORIES.short],
    [{ avoid: ['sad', 'cry'] }, 'no sad/cry…', RULE_STORIES.happy, RULE_STORIES.sad],
    [{ avoid: ['dragon'] }, null, null, null], // the sad story has no dragon
    [{ regex: 'x' }, null, null, null],
  ];
  for (const [rule, topic, with_, without] of cases) {
    const set = wordingSetOfPersona(persona(rule));
    assert.equal(set?.topic ?? null, topic, JSON.stringify(rule));
    assert.equal(set?.with ?? null, with_, JSON.stringify(rule));
    assert.equal(set?.without ?? null, without, JSON.stringify(rule));
  }
  assert.deepEqual(wordingSetOfPersona(persona({ maxWords: 20 }))!.unsatisfied, persona({}).feedback.unsatisfied);
});

test('the default set reads every shipped chat persona; one with no stories on both sides of its rule is skipped and listed, or an error when named', () => {
  const files = ['../../personas/', '../../personas/blind/'].flatMap((d) => {
    const dir = new URL(d, import.meta.url);
    return readdirSync(dir).filter((f) => f.startsWith('chat-') && f.endsWith('.json')).map((f) => new URL(f, dir).pathname);
  });
  const personas = files.map((file) => ({ file, persona: loadPersona(file) }));
  const { sets, skipped } = personaWordingSets(personas, false);
  assert.deepEqual(skipped, [], 'every shipped chat persona has stories on both sides of its rule');
  assert.equal(sets.length, personas.length);
  assert.ok(sets.some((s) => s.topic === 'sun') && sets.some((s) => s.topic === 'dog') && sets.some((s) => s.topic === 'at most 20 words'));
  const odd = [{ file: 'odd.json', persona: { ...personas[0].persona, name: 'odd', satisfied: { maxWords: 5 } } as Persona }];
  assert.deepEqual(personaWordingSets(odd, false), { sets: [], skipped: ['odd'] });
  assert.throws(() => personaWordingSets(odd, true), (e: Error) => e instanceof WordingSetError && /odd\.json: no plain stories fall on both sides of its rule/.test(e.message));
  assert.deepEqual(personaWordingSets(personas.filter((p) => p.persona.name === 'chat-dog-lover'), true).skipped, []);
});

test('each reply is judged reps times after its story and tallied by the user\'s verdict; misread replies are listed', async () => {
  const r = await judgeWordings(new LexicalJudge(), [set], 3);
  assert.equal(r.judgements, 9);
  assert.deepEqual(r.all.satisfied, { positive: 3, neutral: 3, negative: 0, unjudged: 0 });
  assert.deepEqual(r.all.unsatisfied, { positive: 0, neutral: 0, negative: 3, unjudged: 0 });
  assert.equal(r.all.signAgreement, 6 / 9);
  assert.equal(r.wrongSign, 0);
  assert.deepEqual(r.misread, [{ reply: 'Hmm.', satisfied: true, topic: 'duck', scores: [0, 0, 0] }]);
  assert.equal(r.sets.length, 1);
  const wrong = await judgeWordings(new LexicalJudge(), [{ ...set, satisfied: ['No, not that.'], unsatisfied: ['Thanks!'] }], 2);
  assert.equal(wrong.wrongSign, 1);
  assert.equal(wrong.all.signAgreement, 0);
});
