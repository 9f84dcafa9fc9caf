// Vote aggregation, boxed parsing and hint selection: hand-made tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBoxed, majority, parseHintVote, selectHint, isTrivialHint, hintContentWords, isGroundedHint, hintMissingFrom, hintMetBy, hintMetAt, type Score } from '../../src/learn/votes.ts';

test('majority vote over valid votes; a tie or no valid vote is 0', () => {
  const table: [(Score | null)[], Score][] = [
    [[1, 1, -1], 1], [[1, -1, null], 0], [[null, null, -1], -1], [[0, 0, 1], 0], [[null, null, null], 0],
    [[1], 1], [[-1], -1], [[0], 0], [[null], 0], [[], 0], [[-1, -1, 1, 1], 0], [[1, 0, -1], 0], [[-1, -1, 0], -1],
  ];
  for (const [votes, expected] of table) assert.equal(majority(votes), expected, JSON.stringify(votes));
});

test('boxed parsing: the last box wins; spaces and +1 are fine; other numbers and no box fail', () => {
  const table: [string, Score | null][] = [
    ['The user moved on. \\boxed{1}', 1],
    ['\\boxed{-1}', -1],
    ['\\boxed{0}', 0],
    ['First I thought \\boxed{1} but actually \\boxed{-1}', -1],
    ['\\boxed{ -1 }', -1],
    ['\\boxed{+1}', 1],
    ['\\boxed{1} — the user said thanks, so this is positive.', 1],
    ['score: 1', null],
    ['\\boxed{2}', null],
    ['\\boxed{yes}', null],
    ['\\boxed{-0}', 0],
    ['', null],
  ];
  for (const [text, expected] of table) assert.equal(parseBoxed(text), expected, text);
});

test('hint votes: the last hint block; a -1 vote has no usable hint', () => {
  assert.deepEqual(parseHintVote('Analysis…\n\\boxed{1}\n[HINT_START]\nThe user wants a story about a dog.\n[HINT_END]'), { score: 1, hint: 'The user wants a story about a dog.' });
  assert.deepEqual(parseHintVote('\\boxed{-1}'), { score: -1, hint: null });
  assert.deepEqual(parseHintVote('[HINT_START]a[HINT_END] [HINT_START]second hint[HINT_END] \\boxed{1}'), { score: 1, hint: 'second hint' });
  assert.deepEqual(parseHintVote('\\boxed{0} [HINT_START]x[HINT_END]'), { score: null, hint: 'x' });
});

test('hint selection: longest positive wins; short and trivial hints are rejected; one positive vote among negatives is enough', () => {
  const v = (score: 1 | -1 | null, hint: string | null) => ({ score, hint });
  const table: [ReturnType<typeof v>[], string | null][] = [
    [[v(1, 'Write about a dog named Max.'), v(1, 'The user wants a story about a dog, not a cat.')], 'The user wants a story about a dog, not a cat.'],
    [[v(-1, null), v(-1, null), v(1, 'Keep the story under fifty words.')], 'Keep the story under fifty words.'],
    [[v(1, 'Be short.'), v(-1, null)], null], // 9 characters: too short
    [[v(1, 'The response was wrong.'), v(1, 'The answer is incorrect')], null], // trivial
    [[v(-1, 'The user wants a story about a dog.')], null], // negative vote: its hint does not count
    [[v(null, 'The user wants a story about a dog.')], null],
    [[], null],
  ];
  for (const [votes, expected] of table) assert.equal(selectHint(votes), expected, JSON.stringify(votes));
  assert.ok(isTrivialHint('Be more helpful!'));
  assert.ok(!isTrivialHint('Use the metric system for temperatures.'));
});

test('accepted hints: every positive non-trivial hint over 10 characters, duplicates removed, shortest first, at most 3', async () => {
  const { acceptedHints } = await import('../../src/learn/votes.ts');
  const v = (score: 1 | -1 | null, hint: string | null) => ({ score, hint });
  const votes = [
    v(1, 'The user wants a story about a dog.'), v(1, 'Include a dog.'), v(-1, 'Write about a cat.'), v(1, 'the user  wants a story about a DOG.'),
    v(1, 'short'), v(1, 'The answer was wrong.'), v(null, 'Make the story about a dog, please.'), v(1, 'Put a dog in the story.'), v(1, 'Make it about a puppy named Rex.'),
  ];
  assert.deepEqual(acceptedHints(votes), ['Include a dog.', 'Put a dog in the story.', 'Make it about a puppy named Rex.']);
  assert.deepEqual(acceptedHints(votes, 5), ['Include a dog.', 'Put a dog in the story.', 'Make it about a puppy named Rex.', 'The user wants a story about a dog.']);
  assert.deepEqual(acceptedHints([v(-1, 'The user wants a dog.')]), []);
});

test('hint agreement: a hint counts when enough positive votes give it (case and spacing aside); the hint rules on the agreed votes', async () => {
  const { acceptedHints, hintAgreement } = await import('../../src/learn/votes.ts');
  const v = (score: 1 | -1 | null, hint: string | null) => ({ score, hint });
  const bear = 'The user wants a story about a bear.', lily = 'The user wants a character named Lily.';
  const votes = [v(1, bear), v(1, lily), v(1, 'the user wants a story about a  BEAR.'), v(-1, null), v(1, bear), v(null, lily), v(-1, lily)];
  const table: [minVotes: number, expected: boolean[]][] = [
    [1, [true, true, true, true, true, true, true]],
    [0, [true, true, true, true, true, true, true]],
    [2, [true, false, true, true, true, true, true]], // Lily: one positive vote (the null and the −1 ones do not count)
    [3, [true, false, true, true, true, true, true]], // bear: three, counting the differently cased one
    [4, [false, false, false, true, false, true, true]],
  ];
  for (const [minVotes, expected] of table) assert.deepEqual(hintAgreement(votes, minVotes), expected, `minVotes ${minVotes}`);
  const agreed = hintAgreement(votes, 2), kept = votes.filter((_, i) => agreed[i]);
  assert.equal(selectHint(kept), 'the user wants a story about a  BEAR.', 'the longest agreed spelling (37 characters)');
  assert.equal(selectHint(votes), lily, 'every vote counted: the longest wins');
  assert.deepEqual(acceptedHints(kept), [bear]);
  assert.equal(selectHint(votes.filter((_, i) => hintAgreement(votes, 4)[i] && votes[i].score === 1)), null);
});

test('hint content words: the words a hint asks for, less its framing, stemmed', () => {
  const table: [string, string[]][] = [
    ['The user wants a story about a bear.', ['bear']],
    ['The user wants a character named Zoe.', ['zoe']],
    ['Include some frogs.', ['frog']],
    ["Name the hero Zoe's way.", ['zoe', 'way']],
    ['The user wants more stories like this.', []],
    ['The user wants no dragons.', ['dragon']],
    ['Make it shorter.', ['shorter']],
  ];
  for (const [hint, expected] of table) assert.deepEqual(hintContentWords(hint), expected, hint);
});

test('grounded hints: one content word of the hint is in the next state (plurals and case aside)', () => {
  const table: [hint: string, next: string, grounded: boolean][] = [
    ['The user wants a story about a bear.', 'My daughter only likes stories with bears.', true],
    ['The user wants a character named Zoe.', 'Where is Zoe? I asked for Zoe.', true],
    ['The user wants a character named Lily.', 'No bear this time? I want a bear story.', false],
    ['The user wants a story about a box.', 'Good one, thanks. Tell me one more.', false],
    ['The user wants more stories like this.', 'Great, more like this please.', false],
    ['The user likes stories about a bear.', 'A bear! My daughter loves it. Another one?', true],
    // a story's length and mood: any word of the family grounds the hint
    ['The user wants a short story.', 'That went on a bit long for us.', true],
    ['The user wants a short story.', 'Too many words for a toddler.', true],
    ['The user wants a story with nothing sad in it.', 'He got scared by the wolf.', true],
    ['The user wants a short story.', 'Great, thanks!', false],
    ['The user wants a story about a dog.', 'Too long.', false],
    ['The user wants a story with nothing sad in it.', 'That went on a bit long.', false],
  ];
  for (const [hint, next, expected] of table) assert.equal(isGroundedHint(hint, next), expected, `${hint} | ${next}`);
});

test('a hint missing from the answer: it asks for something no word of the answer is, and asks for no absence', () => {
  const table: [hint: string, answer: string, missing: boolean][] = [
    ['The user wants a story about a bear.', 'Once upon a time, there was a dog named Max.', true],
    ['The user wants a story about a bear.', 'Tom had two bears. They played in the sun.', false],
    ['The user wants a character named Zoe.', "Zoe's cat was big.", false],
    ['The user wants a character named Zoe.', 'Lily had a cat.', true],
    ['The user wants no dragons.', 'Lily had a cat.', false],
    ["Don't add a dragon.", 'Lily had a cat.', false],
    ['The user wants more stories like this.', 'Lily had a cat.', false],
  ];
  for (const [hint, answer, expected] of table) assert.equal(hintMissingFrom(hint, answer), expected, `${hint} | ${answer}`);
});

test('a hint the answer already meets: every content word of it is in the answer, and it asks for no absence', () => {
  const table: [hint: string, answer: string, met: boolean][] = [
    ['The user wants a story about a bunny.', 'Once upon a time, a little bunny hopped in the park.', true],
    ['The user likes stories about a bear.', 'Tom had two bears. They played in the sun.', true],
    ['The user wants a story about a bear.', 'Once upon a time, there was a dog named Max.', false],
    // every content word must be there: a big dog is not met by a small one
    ['The user wants a story about a big dog.', 'The small dog ran home.', false],
    ['The user wants a character named Zoe.', "Zoe's cat was big.", true],
    ['The user wants no dragons.', 'The dragon slept.', false],
    ["The user doesn't want a dragon.", 'The dragon slept.', false],
    // a hint of frame words only asks for nothing in particular
    ['The user wants more stories like this.', 'Lily liked more stories like this.', false],
  ];
  for (const [hint, answer, expected] of table) assert.equal(hintMetBy(hint, answer), expected, `${hint} | ${answer}`);
});

test('hintMetAt: the first prefix that meets the hint, a word counting once something follows it or the answer ends', () => {
  const hint = 'The user wants a story about a fish.';
  const table: [string, string[], number | null][] = [
    // the token after "fish" completes it
    [hint, ['Once', 'Once a', 'Once a fis', 'Once a fish', 'Once a fish swam', 'Once a fish swam.'], 4],
    [hint, ['A', 'A fish', 'A fish.'], 2],
    // "fishing" is not "fish"; a fish at the very end counts
    [hint, ['He', 'He went', 'He went fish', 'He went fishing', 'He went fishing.'], null],
    [hint, ['The', 'The fish'], 1],
    // plurals meet the singular (stemmed)
    ['The user wants a story about a bear.', ['Two', 'Two bear', 'Two bears', 'Two bears sat'], 3],
    // every content word: a red ball needs "red" and "ball"
    ['The user wants a story about a red ball.', ['A red', 'A red cat', 'A red cat and a ball', 'A red cat and a ball.'], 3],
    // a hint asking for an absence is never met
    ['The user wants no dragons.', ['A', 'A cat.'], null],
    [hint, [], null],
  ];
  for (const [h, prefixes, expected] of table) assert.equal(hintMetAt(h, prefixes), expected, `${h} | ${prefixes.at(-1)}`);
});
