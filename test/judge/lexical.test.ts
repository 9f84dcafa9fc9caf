// The lexical judge against hand labels on realistic feedback messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lexicalScore, lexicalHint, praiseOnly, complaintOnly, movesOn } from '../../src/judge/lexical.ts';

const LABELED: [string, -1 | 0 | 1][] = [
  ['Thanks, that is perfect!', 1], ['I love it!', 1], ['Great story, thank you.', 1], ['Perfect, exactly what I needed.', 1],
  ['Awesome, thanks a lot', 1], ['not bad, thanks', 1], ['Nice one!', 1], ['That works, thanks.', 1], ['Wonderful!', 1],
  ['Yes, that is correct.', 1], ['This is great, can you also tell me about the moon?', 1], ['thx', 1], ['Well done.', 1],
  ['No problem, that is fine, thanks', 1], ['Good job, that was helpful.', 1], ['Brilliant, my kid loved it', 1],
  ['[Sun 2026-11-22 01:42 UTC] Thanks, bye.', 1], ['Cool, that works now', 1], ['Not bad at all!', 1], ['spot on, thank you', 1],
  ['No, I wanted a story about a dog.', -1], ["That's not what I asked for.", -1], ['Wrong. Try again.', -1], ['Please redo it with a cat instead.', -1],
  ['Nope, too long.', -1], ['This is not great.', -1], ["I don't like this ending.", -1], ['Can you write it again but shorter?', -1],
  ['That is incorrect, the capital is Canberra.', -1], ['Ugh, this is boring.', -1], ['No. I asked for a poem.', -1], ['Make it about a dog instead.', -1],
  ["It doesn't work, I get an error.", -1], ['That was not helpful.', -1], ['I meant a story about a cat.', -1], ['Too short, please make it longer.', -1],
  ['Hmm, not what I meant.', -1], ['The story is sad, I hate sad stories.', -1], ['Stop, this is wrong', -1], ['I said no dragons!', -1],
  ['What is the weather tomorrow?', 0], ['Tell me another story.', 0], ['Ok.', 0], ['Why did the dog run away?', 0],
  ['Can you tell me about the sun?', 0], ['And what happened next?', 0], ['Hmm.', 0], ['Let us talk about something else.', 0],
];

test(`lexical judge agrees with hand labels on ${LABELED.length} feedback messages (≥ 90%)`, () => {
  const wrong = LABELED.filter(([text, label]) => lexicalScore(text) !== label).map(([text, label]) => `${JSON.stringify(text)}: expected ${label}, got ${lexicalScore(text)}`);
  const agreement = 1 - wrong.length / LABELED.length;
  console.log(`# lexical judge agreement: ${(agreement * 100).toFixed(1)}% (${LABELED.length - wrong.length}/${LABELED.length})${wrong.length ? '; disagreements: ' + wrong.join('; ') : ''}`);
  assert.ok(agreement >= 0.9, wrong.join('\n'));
});

test('lexical hints: the corrective sentence, as an instruction where its shape allows', () => {
  const table: [string, string | null][] = [
    ['No, I wanted a story about a dog.', 'The user wants a story about a dog.'],
    ['Nope. I asked for a poem about the sea!', 'The user wants a poem about the sea.'],
    ['I meant a story about a cat', 'The user wants a story about a cat.'],
    ['Please make it shorter.', 'Please make it shorter.'],
    ["Don't use sad words.", "Don't use sad words."],
    ['Thanks, perfect!', null],
    ['No.', null],
    ['[Sun 2026-11-22 01:43 UTC] No, I wanted you to name the dog Max.', 'The user wants the assistant to name the dog Max.'],
  ];
  for (const [text, hint] of table) assert.equal(lexicalHint(text), hint, text);
});

test('praise only: a praise cue, no complaint cue and no opening "no"', () => {
  const table: [string, boolean][] = [
    ['Great, more like this please.', true],
    ['I love it, thanks!', true],
    ['Perfect, my son loves bears.', true],
    ['Great, but where is the bear?', false],
    ['Nice. Next time add a cat.', false],
    ['No, I wanted a dog.', false],
    ['Nope, thanks.', false],
    ['Cute, though I wanted a frog.', false],
    ['That bunny made her giggle!', true],
    ['So sweet, we both enjoyed it.', true],
    ['Just what we needed tonight, thank you.', true],
    ['She would have loved a cookie.', false],
    // "X are his favourite" names what the user wants, whether or not the answer had it: the hint votes read that one
    ['Hmm, cats are his favourite.', false],
    ['Good, but it is sad.', false],
    ['Pretty good, but I like it better with a cat.', false],
    ['Cute, though my son is only into bears right now.', false],
    ['Lovely. I wish it had a fish.', false],
    ['It would be nice to have a tree in it.', false],
    ['Not great.', false],
    ['', false],
  ];
  for (const [text, want] of table) assert.equal(praiseOnly(text), want, text);
});

test('complaint only: a complaint cue or an opening "no", and no praise cue', () => {
  const table: [string, boolean][] = [
    ['It needs a cat.', true],
    ['There was no fish this time.', true],
    ['My daughter adores cookies, could you include one next time?', true],
    ['I was hoping for a duck.', true],
    ['Could the next one have a train?', true],
    ['Where was the castle?', true],
    ['No.', true],
    ['Nice story. Can the next one have cookies in it?', false],
    ['Great story, he loved it.', false],
    ['My son adores bears.', false],
    ['Missing a cookie though, that\'s her favorite.', true],
    ['That was fun. Tell me the next one.', false],
    ['', false],
  ];
  for (const [text, want] of table) assert.equal(complaintOnly(text), want, text);
});

test('moves on: a request for a new answer with no complaint cue, not a wish for what the next one should hold', () => {
  const table: [string, boolean][] = [
    ['Thanks! Now one about a cat.', true],
    ['Great! Can you do a kite story next?', true],
    ['Lovely. Next up: a train story.', true],
    ['That was fun. Tell me the next one.', true],
    ['Nice. Now I want a story about a fish.', true],
    ['ok now tell me one about a boat', true],
    ['Another one about a robot?', true],
    ['Next time add a cat.', false],
    ['Nice, but can the next one have a cat?', false],
    ['Can the next one happen in a castle?', false],
    ['Put a hat in the next story please.', false],
    ['Now make it about a dog.', false],
    ['No, now one about a dog like I asked.', false],
    ['Thanks, though now one with a bear would be better.', false],
    ['Great story!', false],
    ['', false],
  ];
  for (const [text, want] of table) assert.equal(movesOn(text), want, text);
});
