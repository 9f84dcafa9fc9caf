// The words of the recipe: topics, names, and combinatorial phrasing templates for requests, hints,
// feedback and arithmetic questions. Every template group is split by hand into parts used for
// training and parts held out; a phrasing is held out when any of its parts is, so the benchmark
// measures the model on wordings it has never seen whole, and partly never seen at all.

/** Nouns the base model writes about (checked against its own samples), each with its plural. */
export const TOPICS = ['dog', 'cat', 'bird', 'fish', 'bear', 'bunny', 'ball', 'car', 'tree', 'boat', 'cake', 'frog'] as const;
export type Topic = (typeof TOPICS)[number];
const PLURAL: Record<string, string> = { bunny: 'bunnies', fish: 'fish' };
export const plural = (t: string) => PLURAL[t] ?? `${t}s`;

export const NAMES = ['Mia', 'Ben', 'Max', 'Sue', 'Tom', 'Lily', 'Sam', 'Amy', 'Anna', 'Jack', 'Zoe', 'Leo'] as const;

/** Words that make a story not "happy" (the no-sad-words persona's list). */
export const SAD_WORDS = ['sad', 'cry', 'cried', 'crying', 'scared', 'angry', 'hurt', 'mad', 'upset', 'sorry', 'lost', 'broke', 'broken', 'fell', 'bad', 'afraid', 'hit', 'died'];

export interface Parts { train: string[]; heldOut: string[] }

/** All combinations of the groups' parts, split into those made only of training parts and the rest. */
export function combine(groups: Parts[], join: (parts: string[]) => string): { train: string[]; heldOut: string[] } {
  let combos: { parts: string[]; held: boolean }[] = [{ parts: [], held: false }];
  for (const g of groups) {
    combos = combos.flatMap((c) => [
      ...g.train.map((p) => ({ parts: [...c.parts, p], held: c.held })),
      ...g.heldOut.map((p) => ({ parts: [...c.parts, p], held: true })),
    ]);
  }
  const train = new Set<string>(), heldOut = new Set<string>();
  for (const c of combos) (c.held ? heldOut : train).add(join(c.parts));
  for (const t of train) heldOut.delete(t);
  return { train: [...train], heldOut: [...heldOut] };
}

const sentence = (parts: string[]) => parts.join(' ').replace(/\s+([,.?!])/g, '$1').replace(/\s+/g, ' ').trim();

// ---- requests: "{opener} {clause}{end}"; {t} is the topic, {n} a name ----

export const REQUEST_OPENERS: Parts = {
  train: ['Tell me a story', 'Write a story', 'Can you tell me a story', 'Please write a story', 'I want a story', 'Could you write me a story',
    'Make up a story', 'Tell a story', 'Write me a little story', 'Please tell me a story'],
  heldOut: ['I would like a story', 'Give me a short tale', 'Can I have a story'],
};
export const TOPIC_CLAUSES: Parts = {
  train: ['about a {t}', 'with a {t} in it', 'about a little {t}', 'where a {t} is the hero', 'that has a {t}', 'featuring a {t}', 'about a big {t}'],
  heldOut: ['starring a {t}', 'all about a {t}', 'in which a {t} plays'],
};
export const NAME_CLAUSES: Parts = {
  train: ['about someone named {n}', 'with a hero named {n}', 'about a kid named {n}', 'where the main character is called {n}'],
  heldOut: ['about a child called {n}', 'with a friend named {n}'],
};
export const TOPIC_NAME_CLAUSES: Parts = {
  train: ['about a {t} named {n}', 'about a {t} called {n}', 'with a {t} named {n}'],
  heldOut: ['starring a {t} called {n}'],
};
export const REQUEST_ENDS: Parts = { train: ['.', '!', ', please.'], heldOut: ['?'] };
export const PLAIN_REQUESTS: Parts = {
  train: ['Tell me a story.', 'Write a story.', 'Can you tell me a story?', 'Please tell me a story.', 'Story time!', 'Tell me a story, please.',
    'I want a story.', 'Another story, please.', 'Write me a story.', 'Tell me another one.'],
  heldOut: ['Could I hear a story?', 'A story, please!', 'Make up a story for me.'],
};
export const SHORT_CLAUSES: Parts = { train: ['a short one', 'keep it short', 'just a few words', 'make it brief'], heldOut: ['nice and short'] };
export const HAPPY_CLAUSES: Parts = { train: ['a happy one', 'nothing sad', 'make it happy', 'a cheerful one'], heldOut: ['with a happy mood'] };

// ---- hints: the hindsight instruction an OPD teacher sees ----

export const HINT_TOPIC: Parts = {
  train: ['The user wants a story about a {t}.', 'Write about a {t}.', 'The user wants a {t} in the story.', 'Include a {t}.',
    'The story should be about a {t}.', 'The user asked for a {t}.', 'Make the story about a {t}.'],
  heldOut: ['Put a {t} in the story.', 'The user would like the story to feature a {t}.'],
};
export const HINT_NAME: Parts = {
  train: ['The user wants a character named {n}.', 'Name the hero {n}.', 'The story should have someone named {n}.'],
  heldOut: ['Call the main character {n}.'],
};
/** The hint the self judge writes (one canonical form per kind, easy for a small model to produce). */
export const JUDGE_HINT = {
  topic: 'The user wants a story about a {t}.',
  likes: 'The user likes stories about a {t}.',
  name: 'The user wants a character named {n}.',
};

// ---- feedback: what the user says after an answer ----

export const CORRECTION_PREFIXES: Parts = {
  train: ['No,', 'Nope,', 'Hmm,', 'Not quite.', "That's not it.", 'Wrong story.', 'No no,', "That's not what I asked for.", 'Try again,', 'Wait,',
    'Ugh,', 'Sorry, but', 'Not that one.', 'Please change it:'],
  heldOut: ['Not really,', 'Hmm, no.'],
};
export const CORRECTION_TOPIC: Parts = {
  train: ['I wanted a story about a {t}.', 'I asked for a {t}.', 'please put a {t} in it.', 'where is the {t}?', 'can you make it about a {t}?',
    'it should be about a {t}.', 'I want a {t} in the story.', 'I said a {t}.', 'there is no {t} in it.', 'redo it with a {t}.',
    'my kid wanted a {t}.', 'add a {t}, please.', 'it was supposed to have a {t}.'],
  heldOut: ['I was hoping for a {t}.', 'the story needs a {t}.'],
};
export const CORRECTION_NAME: Parts = {
  train: ['I wanted someone named {n}.', 'the hero should be called {n}.', 'where is {n}?'],
  heldOut: ['I asked for a character named {n}.'],
};
export const POSITIVE: Parts = {
  train: ['Thanks!', 'I love it!', 'Great story, thanks!', 'Perfect, thank you!', 'That was lovely.', 'Awesome, my kid loved it!', 'Nice one.',
    'Wonderful!', 'So good, thank you.', 'That is exactly what I wanted.', 'Haha, cute!', 'Great, thanks a lot.', 'My son loved it.',
    'Yes, that is great.', 'Lovely story.', 'Thank you, that was fun!', 'Brilliant!', 'We both liked it a lot.', 'Cool, thanks.', 'Very nice!',
    'That made me smile.', 'Good job!', 'Amazing, thank you.', 'She giggled the whole time, thanks.'],
  heldOut: ['Beautiful, thank you so much!', 'My daughter adored it.', 'Just right, thanks.'],
};
export const POSITIVE_TOPIC: Parts = {
  train: ['I love the {t} in it!', 'Great, the {t} is so cute!', 'Thanks, I really like stories about a {t}.'],
  heldOut: ['The {t} made my day, thanks!'],
};
export const NEUTRAL: Parts = {
  train: ['Ok.', 'Hmm.', 'What time is it?', 'I am going to bed now.', 'Let me think.', 'Wait a second.', 'Is it raining today?', 'Hello.',
    'Brb.', 'What is your name?', 'Where is my phone?', 'I need to cook dinner.', 'Who are you?', 'One moment.', 'Is it Monday?', 'Hi there.'],
  heldOut: ['Hold on.', 'Where are my keys?'],
};
/** Requests to go on after praise (the praise is the signal, the request just continues). */
export const ANOTHER: Parts = { train: ['', 'Tell me another.', 'One more, please.', 'Another one?'], heldOut: ['Can I have another?'] };

// ---- arithmetic questions: {a} {op} {b} ----

export const ARITH_QUESTIONS: Parts = {
  train: ['What is {e}?', 'Compute {e}.', 'Calculate {e}.', 'What does {e} equal?', 'Please work out {e}.', 'How much is {e}?', 'Solve {e}.', '{e} = ?'],
  heldOut: ['Can you calculate {e}?', 'What do you get for {e}?'],
};
export const ARITH_ANSWERS: Parts = { train: ['{e} = {r}.', 'The answer is {r}.', 'It is {r}.'], heldOut: [] };
export const TOOL_ERRORS = ['Error: invalid expression', 'error: division by zero', 'Error: unknown function'];

// ---- assembled phrasing sets ----

export const fill = (s: string, v: { t?: string; n?: string; e?: string; r?: string }) =>
  s.replaceAll('{t}', v.t ?? '').replaceAll('{n}', v.n ?? '').replaceAll('{e}', v.e ?? '').replaceAll('{r}', v.r ?? '');

export interface PhrasingSets {
  topicRequests: { train: string[]; heldOut: string[] };
  nameRequests: { train: string[]; heldOut: string[] };
  topicNameRequests: { train: string[]; heldOut: string[] };
  shortRequests: { train: string[]; heldOut: string[] };
  happyRequests: { train: string[]; heldOut: string[] };
  plainRequests: { train: string[]; heldOut: string[] };
  topicHints: { train: string[]; heldOut: string[] };
  nameHints: { train: string[]; heldOut: string[] };
  topicCorrections: { train: string[]; heldOut: string[] };
  nameCorrections: { train: string[]; heldOut: string[] };
  positive: { train: string[]; heldOut: string[] };
  positiveTopic: { train: string[]; heldOut: string[] };
  neutral: { train: string[]; heldOut: string[] };
  arithmetic: { train: string[]; heldOut: string[] };
}

/** Every phrasing set the recipe uses, with placeholders ({t}, {n}, {e}) still in place. */
export function phrasingSets(): PhrasingSets {
  const ends = REQUEST_ENDS;
  const request = (clauses: Parts) => combine([REQUEST_OPENERS, clauses, ends], sentence);
  const withPlain = (clauses: Parts) => combine([PLAIN_REQUESTS, clauses], (p) => `${p[0]} ${p[1][0].toUpperCase()}${p[1].slice(1)}.`);
  const positive = combine([POSITIVE, ANOTHER], sentence);
  return {
    topicRequests: request(TOPIC_CLAUSES),
    nameRequests: request(NAME_CLAUSES),
    topicNameRequests: request(TOPIC_NAME_CLAUSES),
    shortRequests: withPlain(SHORT_CLAUSES),
    happyRequests: withPlain(HAPPY_CLAUSES),
    plainRequests: { train: PLAIN_REQUESTS.train, heldOut: PLAIN_REQUESTS.heldOut },
    topicHints: { train: HINT_TOPIC.train, heldOut: HINT_TOPIC.heldOut },
    nameHints: { train: HINT_NAME.train, heldOut: HINT_NAME.heldOut },
    topicCorrections: combine([CORRECTION_PREFIXES, CORRECTION_TOPIC], (p) => sentence([p[0], p[0].endsWith('.') ? p[1][0].toUpperCase() + p[1].slice(1) : p[1]])),
    nameCorrections: combine([CORRECTION_PREFIXES, CORRECTION_NAME], (p) => sentence([p[0], p[0].endsWith('.') ? p[1][0].toUpperCase() + p[1].slice(1) : p[1]])),
    positive,
    positiveTopic: { train: POSITIVE_TOPIC.train, heldOut: POSITIVE_TOPIC.heldOut },
    neutral: { train: NEUTRAL.train, heldOut: NEUTRAL.heldOut },
    arithmetic: { train: ARITH_QUESTIONS.train, heldOut: ARITH_QUESTIONS.heldOut },
  };
}
