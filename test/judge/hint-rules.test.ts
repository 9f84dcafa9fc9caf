// How the judge reads its hint votes against the turn: hints not grounded in the next state are set aside (their
// text kept), and grounded hints that ask for what the answer lacks make the turn −1 whatever the PRM majority.
// The backend is a scripted double of a judge model's answers (the rules, not a model, are under test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrmJudge, type WordRule } from '../../src/judge/judge.ts';
import type { JudgeInput } from '../../src/judge/prompts.ts';
import { selfJudgeOptions, SELF_JUDGE_MISSING_HINT_VOTES, SELF_JUDGE_MET_HINT_VOTES, SELF_JUDGE_WORD_RULE } from '../../src/judge/config.ts';

/** A judge model double: answers PRM prompts and hint prompts from two scripts, in order. */
function scripted(prm: string[], hint: string[]) {
  const asked = { prm: 0, hint: 0 };
  return {
    asked,
    backend: {
      name: 'scripted-double', promptStyle: 'compact' as const,
      complete: async (messages: { role: string; content: string }[]) => {
        const isHint = /hint/i.test(messages[0].content);
        return isHint ? hint[asked.hint++ % hint.length] : prm[asked.prm++ % prm.length];
      },
    },
  };
}
const hintAnswer = (h: string) => `\\boxed{1}\n[HINT_START]${h}[HINT_END]`;
const turn = (response: string, next: string, role: 'user' | 'tool' = 'user'): JudgeInput => ({ response, nextState: { role, text: next, looksLikeError: false } });

test('hints none of whose words the reply used are set aside, with the reason; their text is kept', async () => {
  const { backend } = scripted(['\\boxed{-1}'], [hintAnswer('The user wants a character named Lily.'), hintAnswer('The user wants a story about a bear.'), '\\boxed{-1}']);
  const j = await new PrmJudge(backend, { m: 3, groundHints: true }).judge(turn('Lily had a dog.', 'No bear this time? I want a bear story.'), { hints: true });
  const hints = j.votes.filter((v) => v.kind === 'hint');
  assert.deepEqual(hints.map((v) => v.hint), [null, 'The user wants a story about a bear.', null]);
  assert.equal(hints[0].dropped, 'none of its words are in the next state');
  assert.match(hints[0].text, /Lily/);
  assert.equal(hints[1].dropped, undefined);
  assert.equal(j.hint, 'The user wants a story about a bear.');
  // off: every parsed hint stays
  const off = await new PrmJudge(scripted(['\\boxed{-1}'], [hintAnswer('The user wants a character named Lily.')]).backend, { m: 1 }).judge(turn('Lily had a dog.', 'No bear?'), { hints: true });
  assert.equal(off.hint, 'The user wants a character named Lily.');
});

test('grounded hints asking for what the answer lacks outweigh a positive majority, from the configured number of votes', async () => {
  const bearHint = hintAnswer('The user wants a story about a bear.');
  const table: [name: string, prm: string[], hints: string[], response: string, missingHintVotes: number, score: number, rule: boolean][] = [
    ['two votes ask for a bear the story lacks', ['\\boxed{1}'], [bearHint, bearHint, '\\boxed{-1}'], 'Lily had a dog.', 2, -1, true],
    ['one vote is not enough at 2', ['\\boxed{1}'], [bearHint, '\\boxed{-1}', '\\boxed{-1}'], 'Lily had a dog.', 2, 1, false],
    ['one vote is enough at 1', ['\\boxed{1}'], [bearHint, '\\boxed{-1}', '\\boxed{-1}'], 'Lily had a dog.', 1, -1, true],
    ['the story has the bear: praise stays praise', ['\\boxed{1}'], [bearHint], 'Lily had a bear.', 2, 1, false],
    ['a neutral majority becomes −1', ['\\boxed{1}', '\\boxed{-1}', '\\boxed{0}'], [bearHint], 'Lily had a dog.', 2, -1, true],
    ['off at 0', ['\\boxed{1}'], [bearHint], 'Lily had a dog.', 0, 1, false],
  ];
  for (const [name, prm, hints, response, missingHintVotes, score, rule] of table) {
    const j = await new PrmJudge(scripted(prm, hints).backend, { m: 3, groundHints: true, missingHintVotes }).judge(turn(response, 'My daughter only likes stories with bears.'), { hints: false });
    assert.equal(j.score, score, name);
    assert.equal(j.rule !== undefined, rule, name);
    assert.equal(j.hint, null, `${name}: no hint asked for training`);
  }
});

test('grounded hints asking for what the answer already has outweigh a negative majority, unless one asks for what it lacks', async () => {
  const bunny = hintAnswer('The user wants a story about a bunny.'), fox = hintAnswer('The user wants a story about a fox.');
  const table: [name: string, prm: string[], hints: string[], response: string, metHintVotes: number, score: number, rule: boolean][] = [
    ['two votes ask for the bunny the story has', ['\\boxed{-1}'], [bunny, bunny, '\\boxed{-1}'], 'A little bunny hopped home.', 2, 1, true],
    ['one vote is not enough at 2', ['\\boxed{-1}'], [bunny, '\\boxed{-1}', '\\boxed{-1}'], 'A little bunny hopped home.', 2, -1, false],
    ['a neutral majority becomes +1', ['\\boxed{0}'], [bunny], 'A little bunny hopped home.', 2, 1, true],
    ['a vote asking for what the story lacks blocks it (and two of them make it −1)', ['\\boxed{1}'], [bunny, bunny, fox], 'A little bunny hopped home.', 2, 1, false],
    ['the story has no bunny: the missing rule, not this one', ['\\boxed{1}'], [bunny], 'A dog ran home.', 2, -1, true],
    ['off at 0', ['\\boxed{-1}'], [bunny], 'A little bunny hopped home.', 0, -1, false],
  ];
  for (const [name, prm, hints, response, metHintVotes, score, rule] of table) {
    const j = await new PrmJudge(scripted(prm, hints).backend, { m: 3, groundHints: true, missingHintVotes: 2, metHintVotes }).judge(turn(response, 'that bunny and the fox made her giggle'), { hints: false });
    assert.equal(j.score, score, name);
    assert.equal(j.rule !== undefined, rule, name);
  }
});

test('the cross-check asks hint votes on user turns only, also when training wants no hint', async () => {
  const user = scripted(['\\boxed{1}'], ['\\boxed{-1}']);
  await new PrmJudge(user.backend, { m: 3, missingHintVotes: 2 }).judge(turn('A story.', 'Thanks!'), { hints: false });
  assert.deepEqual(user.asked, { prm: 3, hint: 3 });
  const tool = scripted(['\\boxed{1}'], ['\\boxed{-1}']);
  await new PrmJudge(tool.backend, { m: 3, missingHintVotes: 2 }).judge(turn('{"name":"ls"}', 'a.txt b.txt', 'tool'), { hints: false });
  assert.deepEqual(tool.asked, { prm: 3, hint: 0 });
});

test('an ungrounded hint never triggers the cross-check', async () => {
  const j = await new PrmJudge(scripted(['\\boxed{1}'], [hintAnswer('The user wants a story about a box.')]).backend, { m: 3, groundHints: true, missingHintVotes: 2 })
    .judge(turn('Lily had a dog.', 'Good one, thanks. Tell me one more.'), { hints: false });
  assert.equal(j.score, 1);
  assert.equal(j.rule, undefined);
});

test('the word rule: veto keeps praise-only words from −1 (0); decide makes them +1 and complaint-only words −1; off leaves the votes', async () => {
  const table: [name: string, prm: string, next: string, rule: WordRule, score: number, why: RegExp | null][] = [
    ['veto: praise only, majority −1', '\\boxed{-1}', 'Great, more like this please.', 'veto', 0, /praise only/],
    ['off: praise only, majority −1', '\\boxed{-1}', 'Great, more like this please.', 'off', -1, null],
    ['veto: praise and a wish', '\\boxed{-1}', 'Great, but next time add a bear.', 'veto', -1, null],
    ['veto: a complaint', '\\boxed{-1}', 'No, I wanted a bear.', 'veto', -1, null],
    ['veto: praise only, majority +1', '\\boxed{1}', 'Great, more like this please.', 'veto', 1, null],
    ['veto: a complaint, majority +1', '\\boxed{1}', 'It needs a bear.', 'veto', 1, null],
    ['decide: praise only, majority −1', '\\boxed{-1}', 'So sweet, we both enjoyed it.', 'decide', 1, /praise only/],
    ['decide: praise only, majority 0', '\\boxed{0}', 'Lovely story, thanks.', 'decide', 1, /praise only/],
    ['decide: a complaint only, majority +1', '\\boxed{1}', 'My son loves bears, could you include one next time?', 'decide', -1, /complaint only/],
    ['decide: a complaint only, majority 0', '\\boxed{0}', 'There was no bear this time.', 'decide', -1, /complaint only/],
    ['decide: praise and a wish stay with the votes', '\\boxed{1}', 'Nice story. Can the next one have a bear in it?', 'decide', 1, null],
    ['decide: no cue either way stays with the votes', '\\boxed{1}', 'My son adores bears.', 'decide', 1, null],
    ['off: a complaint only, majority +1', '\\boxed{1}', 'It needs a bear.', 'off', 1, null],
  ];
  for (const [name, prm, next, wordRule, score, why] of table) {
    const j = await new PrmJudge(scripted([prm], ['\\boxed{-1}']).backend, { m: 3, wordRule }).judge(turn('A story about a box.', next), { hints: false });
    assert.equal(j.score, score, name);
    if (why) assert.match(j.rule ?? '', why, name); else assert.equal(j.rule, undefined, name);
  }
  // a tool result is never read by its words
  for (const wordRule of ['veto', 'decide'] as WordRule[]) {
    const tool = await new PrmJudge(scripted(['\\boxed{-1}'], []).backend, { m: 3, wordRule }).judge(turn('{"name":"ls"}', 'great', 'tool'), { hints: false });
    assert.equal(tool.score, -1);
  }
});

test('decide does not overrule the hint votes: praise words with hints asking for what the answer lacks stay −1, complaint words with hints it meets stay +1', async () => {
  const bear = hintAnswer('The user wants a story about a bear.');
  const lacks = await new PrmJudge(scripted(['\\boxed{1}'], [bear]).backend, { m: 3, groundHints: true, missingHintVotes: 2, metHintVotes: 2, wordRule: 'decide' })
    .judge(turn('Lily had a dog.', 'Sweet story, one more please, a bear would be lovely.'), { hints: false });
  assert.equal(lacks.score, -1);
  assert.match(lacks.rule ?? '', /lacks/);
  const has = await new PrmJudge(scripted(['\\boxed{-1}'], [bear]).backend, { m: 3, groundHints: true, missingHintVotes: 2, metHintVotes: 2, wordRule: 'decide' })
    .judge(turn('Lily had a bear.', 'No more bear stories without a bear, please.'), { hints: false });
  assert.equal(has.score, 1);
  assert.match(has.rule ?? '', /has/);
});

test('decide: a reply that moves on is not a complaint whatever the hint votes say, and gives no hint', async () => {
  const cat = hintAnswer('The user wants a story about a cat.');
  const judge = (prm: string, next: string) => new PrmJudge(scripted([prm], [cat]).backend, { m: 3, groundHints: true, missingHintVotes: 2, metHintVotes: 2, wordRule: 'decide' })
    .judge(turn('Lily had a dog.', next), { hints: true });
  const praised = await judge('\\boxed{-1}', 'Thanks! Now one about a cat.');
  assert.equal(praised.score, 1);
  assert.match(praised.rule ?? '', /moves on/);
  assert.equal(praised.hint, null);
  const plain = await judge('\\boxed{-1}', 'ok now tell me one about a cat');
  assert.equal(plain.score, 0);
  assert.equal(plain.hint, null);
  assert.equal((await judge('\\boxed{1}', 'ok now tell me one about a cat')).score, 1);
  // a wish for what the next one should hold is still read by the hint votes: the answer lacked the cat
  const wish = await judge('\\boxed{1}', 'Put a cat in the next story please.');
  assert.equal(wish.score, -1);
  assert.match(wish.hint ?? '', /cat/);
  // off leaves the votes (veto only lifts praise-only words to 0)
  const off = await new PrmJudge(scripted(['\\boxed{-1}'], [cat]).backend, { m: 3, groundHints: true, missingHintVotes: 2, wordRule: 'off' }).judge(turn('Lily had a dog.', 'Thanks! Now one about a cat.'), { hints: true });
  assert.equal(off.score, -1);
});

test('the self judge takes these rules with the compact prompts only (a model that reads the full prompts reads the reply itself)', () => {
  const c = { votes: 7, temperature: 0.6, maxTokens: 48 };
  assert.deepEqual(selfJudgeOptions(c, 'compact'), { m: 7, temperature: 0.6, maxTokens: 48, groundHints: true, missingHintVotes: SELF_JUDGE_MISSING_HINT_VOTES, metHintVotes: SELF_JUDGE_MET_HINT_VOTES, wordRule: SELF_JUDGE_WORD_RULE });
  assert.deepEqual(selfJudgeOptions({ ...c, wordRule: 'veto' }, 'compact').wordRule, 'veto');
  assert.deepEqual(selfJudgeOptions(c, 'full'), { m: 7, temperature: 0.6, maxTokens: 48, groundHints: false, missingHintVotes: 0, metHintVotes: 0, wordRule: 'off' });
});
