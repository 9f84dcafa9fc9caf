// The lexical judge on feedback it used to miss: negation that must stay inside its clause, and soft or
// suggestive complaints ("Meh.", "Could you include a cat next time?", "It needs some dialogue.").
// Two tables: TUNED was written together with the cue lists; HELD_OUT was written before the cues were
// checked against it and is never edited to make it pass — its agreement is reported, with a floor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lexicalScore, lexicalHint } from '../../src/judge/lexical.ts';

const TUNED: [string, -1 | 0 | 1, string | null][] = [
  ['Hmm, no dog? I meant a story about a dog.', -1, 'The user wants a story about a dog.'],
  ['Meh.', -1, null],
  ['Could you include a cat next time?', -1, 'The user wants the assistant to include a cat.'],
  ['It needs some dialogue.', -1, 'The user wants the response to have some dialogue.'],
  ['It needs to be shorter.', -1, 'The user wants the response to be shorter.'],
  ['The story lacks a happy ending.', -1, 'The user wants the response to have a happy ending.'],
  ['Can you add a dragon, please?', -1, 'The user wants the assistant to add a dragon.'],
  ['not bad, thanks', 1, null],
  ["that's not what I asked", -1, null],
  ['Not very good.', -1, null],
  ['No cat? Great, thanks anyway.', 0, null],
  ['That should be fine, thanks', 1, null],
  ['Can you tell me about the sun?', 0, null],
];

test('the tuned feedback table: scores and hints', () => {
  for (const [text, score, hint] of TUNED) {
    assert.equal(lexicalScore(text), score, `score of ${JSON.stringify(text)}`);
    assert.equal(lexicalHint(text), hint, `hint of ${JSON.stringify(text)}`);
  }
});

// A story's length and mood: complaints about a long or frightening story, and praise of the right length; a negated cue
// turns ("it didn't drag on", "not scary at all" are praise).
const STYLE: [string, -1 | 0 | 1][] = [
  ['That was a bit long for bedtime.', -1],
  ['Way too wordy.', -1],
  ['It went on and on.', -1],
  ['Could you trim the next one?', -1],
  ['Something quicker, please.', -1],
  ['Too many words for a baby.', -1],
  ['That was scary for him.', -1],
  ['A bit gloomy for bedtime.', -1],
  ['It gave her nightmares.', -1],
  ['Lovely, and it did not drag on.', 1],
  ['Not scary at all, thanks!', 1],
  ['Just the right length.', 1],
  ['Short and sweet!', 1],
  ['Once upon a time it was long ago.', 0],
];

test('length and mood cues: complaints about a long or frightening story, praise of the right length, negation turns them', () => {
  for (const [text, score] of STYLE) assert.equal(lexicalScore(text), score, `score of ${JSON.stringify(text)}`);
});

test('a negator does not reach across a sentence boundary into the next clause', () => {
  assert.equal(lexicalScore('No dog. I wanted a dog.'), -1);
  assert.equal(lexicalScore('Hmm, no dog? I meant a story about a dog.'), -1);
  assert.equal(lexicalScore('Not great.'), -1);
  assert.equal(lexicalScore('Not so great, honestly.'), -1);
  assert.equal(lexicalScore('Not bad at all!'), 1);
});

// Written before running them; not tuned on. Reported as measured.
const HELD_OUT: [string, -1 | 0 | 1][] = [
  ['Eh, it was okay I guess but kind of flat.', -1],
  ['Where is the dog? There is no dog in it.', -1],
  ['I was hoping for something funnier.', -1],
  ['That went on way too long.', -1],
  ['Please put a puppy in the next one.', -1],
  ['Could it be a bit happier?', -1],
  ['Hmm, the ending makes no sense.', -1],
  ['Nah, try a different animal.', -1],
  ['Not what I had in mind.', -1],
  ['It is missing the part about the garden.', -1],
  ['Lovely, my daughter enjoyed it.', 1],
  ['That was sweet, thank you!', 1],
  ['Yes! Exactly the kind of story I like.', 1],
  ['Nice, not too long either.', 1],
  ['I really enjoyed that one.', 1],
  ['Ha, that was fun.', 1],
  ['What time is it in Tokyo?', 0],
  ['Now tell me a story about a frog.', 0],
  ['Who is the main character?', 0],
  ['Okay, next question.', 0],
];

test(`the lexical judge on ${HELD_OUT.length} held-out phrasings it was not tuned on (floor 60%)`, () => {
  const wrong = HELD_OUT.filter(([text, label]) => lexicalScore(text) !== label)
    .map(([text, label]) => `${JSON.stringify(text)}: expected ${label}, got ${lexicalScore(text)}`);
  const agreement = 1 - wrong.length / HELD_OUT.length;
  console.log(`# held-out lexical agreement: ${(agreement * 100).toFixed(0)}% (${HELD_OUT.length - wrong.length}/${HELD_OUT.length})` +
    (wrong.length ? `; misses: ${wrong.join('; ')}` : ''));
  assert.ok(agreement >= 0.6, wrong.join('\n'));
});
