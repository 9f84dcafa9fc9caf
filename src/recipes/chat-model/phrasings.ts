// The words of the recipe: topics, names, and combinatorial phrasing templates for requests, hints,
// feedback and arithmetic questions. Every template group is split by hand into parts used for
// training and parts held out; a phrasing is held out when any of its parts is, so the benchmark
// measures the model on wordings it has never seen whole, and partly never seen at all.

/**
 * Nouns the base model writes about (the things of its stories: animals, toys, food, places, people), each with its
 * plural. Up to v5 the recipe taught twelve, and the model followed a request or a hint for those alone: for "hat",
 * "kite" or "horse" it wrote its habitual story 20 times in 20. A build taught 53 followed the new ones it was taught
 * ("horse" 0 → 20 of 20) and still almost none it was not ("hat", "kite", "apple", "moon", "lion": 0–2 of 20): the
 * model learns each noun, not to copy any noun. v6 therefore teaches every common noun of its stories that a user may
 * ask for (docs/benchmarks.md, recipe v6); the first twelve stay first, as the benchmark's own topics.
 */
export const TOPICS = ['dog', 'cat', 'bird', 'fish', 'bear', 'bunny', 'ball', 'car', 'tree', 'boat', 'cake', 'frog',
  'toy', 'box', 'house', 'sun', 'flower', 'garden', 'teddy', 'rock', 'doll', 'pond', 'bug', 'train', 'chair', 'dress',
  'truck', 'squirrel', 'farm', 'bag', 'shoe', 'horse', 'book', 'hill', 'puppy', 'butterfly', 'cave', 'puzzle', 'ship',
  'turtle', 'drum', 'beach', 'leaf', 'rabbit', 'castle', 'goat', 'rocket', 'rainbow', 'dragon', 'cookie', 'pig', 'cow',
  'hat', 'duck', 'moon', 'apple', 'kite', 'lion', 'fox', 'mouse', 'monkey', 'elephant', 'tiger', 'sheep', 'chicken',
  'bee', 'kitten', 'snake', 'whale', 'deer', 'zebra', 'wolf', 'ant', 'spider', 'worm', 'snail', 'owl', 'balloon',
  'robot', 'block', 'crayon', 'sock', 'coat', 'cup', 'key', 'ring', 'clock', 'blanket', 'banana', 'candy', 'pie',
  'carrot', 'pizza', 'egg', 'star', 'shell', 'lake', 'river', 'sea', 'mountain', 'park', 'forest', 'cloud', 'king',
  'queen', 'princess', 'fairy', 'monster', 'pirate', 'clown', 'swing', 'slide', 'bubble', 'puddle', 'seed', 'boot',
  'umbrella', 'bike'] as const;
export type Topic = (typeof TOPICS)[number];
/**
 * Nouns the base writes that the recipe never teaches: `bench chat-model` asks for them to measure whether following a
 * requested topic carries over to a noun the model was not taught.
 */
export const HELD_OUT_TOPICS = ['lamp', 'pear', 'bell', 'nest'] as const;
const PLURAL: Record<string, string> = { fish: 'fish', leaf: 'leaves', sheep: 'sheep', mouse: 'mice', deer: 'deer', wolf: 'wolves' };
/** The plural of a topic noun: -y after a consonant → -ies, -s/-x/-ch/-sh → -es, a few irregular ones. */
export const plural = (t: string) => PLURAL[t] ?? (/[^aeiou]y$/.test(t) ? `${t.slice(0, -1)}ies` : /(s|x|ch|sh)$/.test(t) ? `${t}es` : `${t}s`);
/** A template with its topic filled in, "a {t}" becoming "an {t}" before a vowel ("an apple"). */
export const withTopic = (template: string, t: string) =>
  template.replace(/\b([Aa]) \{t\}/g, (_, a: string) => `${/^[aeiou]/.test(t) ? `${a}n` : a} {t}`).replaceAll('{t}', t);

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
// More ways to ask, for training only: held-out request sets are still made from the parts above alone, so the
// benchmark asks exactly what earlier recipe versions were measured on. v3 followed 70% of topic requests worded
// as in training but ignored some held-out ones ("I would like a story all about a tree?" → "…a little girl
// named Lily", 4 of 12): 10 openers × 7 clauses taught the wordings rather than "a story … a {t}".
export const REQUEST_OPENERS_MORE = ['Tell us a story', 'Could you tell a story', 'Read me a story', 'Share a story', "Let's hear a story",
  'Do you have a story', 'Please make up a story', 'Tell me a quick story', 'I need a story', 'Can you make a story', 'Tell my kid a story',
  'Now a story', 'Write a new story', 'Tell me a bedtime story'];
export const TOPIC_CLAUSES_MORE = ['about one {t}', 'with a {t}', 'about the {t}', 'about my {t}', 'where there is a {t}', 'about a funny {t}',
  'that includes a {t}', 'about a happy {t}', 'about a {t} and a friend', 'with a little {t}', 'for me about a {t}', 'that is about a {t}',
  'where a {t} has fun', 'about a small {t}', 'with a {t} as the main character'];
export const NAME_CLAUSES_MORE = ['about a girl named {n}', 'about a boy named {n}', 'where someone is called {n}', 'with a kid called {n}',
  'about my friend {n}', 'where the hero is {n}'];
export const REQUEST_ENDS_MORE = [' please!', '...', ' :)', ' now.', ', thanks.'];
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
// v8: hints about the kind of story rather than a word in it (the OPD teacher's prompt for a user who wants short or
// cheerful stories). Up to v7 hints named a topic or a name only, and the chat model wrote its usual length and mood
// whatever a hint said.
export const HINT_SHORT: Parts = {
  train: ['The user wants a short story.', 'Keep the story short.', 'The user wants shorter stories.', 'Write just a few sentences.',
    'The story should be short.', 'Make it a very short story.', 'The user wants a quick story.'],
  heldOut: ['Make the story brief.', 'Tell it in two sentences.'],
};
export const HINT_HAPPY: Parts = {
  train: ['The user wants a story with nothing sad in it.', 'Keep the story happy.', 'The user wants a happy story, nothing scary.',
    'The story should be cheerful.', 'Nothing sad or scary in the story.', 'The user wants a gentle, happy story.'],
  heldOut: ['Make the story calm and happy.', 'No crying or fear in the story.'],
};
/** The hint the self judge writes (one canonical form per kind, easy for a small model to produce). */
export const JUDGE_HINT = {
  topic: 'The user wants a story about a {t}.',
  likes: 'The user likes stories about a {t}.',
  name: 'The user wants a character named {n}.',
  /** v8: "short" is a content word the hint rules look for in the answer; a long story lacks it, as it should */
  short: 'The user wants a short story.',
  /** v8: "nothing" asks for an absence, so the hint rules do not look for "sad" in the answer */
  happy: 'The user wants a story with nothing sad in it.',
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
// Praise and unrelated replies as combinations, for training only (they add no held-out parts, so the held-out
// phrasings above stay exactly what earlier recipe versions were measured on). v3's judge learned "-1 unless the
// praise is one I know" from 24 fixed phrases against ~180 correction combinations (held-out praise: 32% right).
export const PRAISE_OPENERS: Parts = { train: ['', 'Oh,', 'Wow,', 'Aww,', 'Yay!', 'Ha,', 'Yes!', 'Ooh,', 'Okay,', 'Oh yes,', 'Hey,'], heldOut: [] };
export const PRAISE_BODIES: Parts = {
  train: ['I love it', 'I loved it', 'that was great', 'so cute', 'we loved it', 'my kid loved it', 'that was perfect', 'very nice',
    'what a fun story', 'it was lovely', 'my son liked it a lot', 'she loved it', 'that was really good', 'great story', 'nice story',
    'that was sweet', 'we enjoyed it', 'he liked it', 'good one', 'so much fun', 'that was fun', 'it made us laugh', 'my kids liked it',
    'my girl loved it', 'that is a good story', 'we really liked it', 'that was wonderful', 'fantastic', 'super', 'well done', 'love it'],
  heldOut: [],
};
export const PRAISE_CLOSERS: Parts = { train: ['!', '.', ', thanks!', ', thank you!', '. Thanks a lot.', '. Thank you so much.', ', thanks.', '!!', ' :)'], heldOut: [] };
export const PRAISE_TOPIC_BODIES: Parts = {
  train: ['I love the {t}', 'the {t} is so cute', 'the {t} was the best part', 'we love the {t}', 'my kid loved the {t}', 'what a sweet {t}',
    'the {t} was funny', 'I like the {t} a lot', 'such a nice {t}', 'stories about a {t} are the best'],
  heldOut: [],
};
export const NEUTRAL_MORE: Parts = {
  train: ['Good night.', 'I have to go.', 'Can you hear me?', 'What day is it?', 'My phone is almost dead.', 'Be right back.', 'I am hungry.',
    'Is the door locked?', 'What is the weather like?', 'Hmm, ok.', 'Sure.', 'Let me check something.', 'Give me a minute.', 'Oops, wrong window.',
    'How old are you?', 'Do you like music?', 'Where is the remote?', 'The kids are asleep.', 'Test.', 'Are you there?'],
  heldOut: [],
};

/** What may follow praise in training (v3's judge read "…! Can I have another?" as a redo): asking for more is no correction. */
export const PRAISE_THEN: Parts = {
  train: ['', 'Tell me another.', 'One more, please.', 'Another one?', 'Can you tell another?', 'Could you write another one?', 'More please!',
    'Now another one, please.', 'Tell me one more.', 'What about another story?', 'Do another one!', 'Again!', 'May we have one more?',
    'Can you do another?', 'Another, please!', 'Any more stories?'],
  heldOut: [],
};

// Feedback that asks for a change without saying "no" (v5's judge read "My daughter only likes stories with bears." as
// praise and "A {t} story would be nicer." as praise; about half right on such wordings, against 90%+ on "No, …").
// Preferences say what the user likes: after a story that has the topic they are praise, after one without, a correction,
// so the judge must read the story. Wishes and absences are corrections whatever the story.
export const PREFERENCES: Parts = {
  train: ['My kid is crazy about {p}.', 'He loves {p} more than anything.', 'She is mad about {p} these days.', 'We are all about {p} this week.',
    'Our favourite thing is a {t}.', 'My son only wants {t} stories.', 'My girl asks for a {t} every night.', 'Stories with a {t} are the only ones he likes.',
    'We always read about {p}.', 'Her favourite is the {t}.', 'My boy talks about {p} all day.', 'Nothing beats a {t} for us.', 'I am a big fan of {p}.'],
  heldOut: ['My son is only into {p} right now.', 'She keeps asking for {p}.', 'Hmm, {p} are his favourite.', 'We only read {t} stories at bedtime.'],
};
export const WISHES: Parts = {
  train: ['It would be better with a {t}.', 'I would prefer a {t} story.', 'Maybe add a {t} next time.', 'Next time, a {t} please.', 'How about a {t} instead?',
    'What about a story with a {t}?', 'I think a {t} would help.', 'Can the next one have a {t}?', 'I wish there was a {t} in it.',
    'It is more fun when there is a {t}.', 'Perhaps one with a {t}?', 'Let the {t} be in the next one.', 'Try one with a {t} in it.'],
  heldOut: ['A {t} story would be nicer.', 'I like it better with a {t}.', 'Could there be a {t} next time?', 'We were hoping the {t} would show up.'],
};
export const ABSENCES: Parts = {
  train: ['There was no {t}.', 'Still no {t}.', 'You forgot the {t}.', 'Where did the {t} go?', 'I did not see a {t}.', 'No {t}? Hmm.',
    'Not a single {t} in it.', 'The {t} is missing.', 'Why is there no {t}?', 'Where are the {p}?', 'Did you leave out the {t}?', 'I count zero {p}.'],
  heldOut: ['No {t} again...', 'That one had no {t} at all.'],
};
/** Soft praise before a correction ("Nice, but …"): the correction is what counts. */
export const SOFT_LEADS: Parts = {
  train: ['Nice, but', 'Cute, but', 'Good story, but', 'That was okay, but', 'Fun, but', 'Not bad, but', 'Lovely, but', 'Sweet, but', 'Ok,', 'Thanks, but'],
  heldOut: ['Cute, though', 'Pretty good, but'],
};

// v8: feedback about the length or the mood of a story, not a thing in it. v6's judge read "too long"-style complaints
// without those exact words at chance and mood praise ("everyone stayed happy") as a complaint.
export const LENGTH_COMPLAINTS: Parts = {
  train: ['Too long.', 'That was way too long.', 'Shorter next time, please.', 'Can you make it shorter?', 'It went on and on.',
    'Too many words for bedtime.', 'Keep the next one brief, please.', 'That was long. Just a few lines next time.', 'A shorter one, please.',
    'He fell asleep before the end. Make it quicker.', 'Could the next one be a lot shorter?', 'Fewer words, please.', 'It was a bit long for her.',
    'Way too wordy for a toddler.', 'That took forever to read.', 'Less of it next time, please.', 'She stopped listening halfway.',
    'Can you keep them much shorter?', 'It was so long, we never got to the end.', 'Please cut it down a lot.', 'I only need a couple of sentences.',
    'We need something quicker at bedtime.', 'Long stories lose him.', 'That was more than we had time for.'],
  heldOut: ['Half as long next time?', 'That dragged on a little.', 'Can you trim it down next time?', 'Bit of a long one for a little kid.'],
};
export const LENGTH_PRAISE: Parts = {
  train: ['Just the right length, thank you!', 'Quick and cute, thanks.', 'Perfect, short enough for bedtime.', 'Love how short that was.',
    'A short one, just what we needed.', 'That was the right size, thanks!', 'Great, nice and quick.', 'Brief and lovely, thank you.',
    'Short stories like that are perfect.', 'He listened to the whole thing, thanks!', 'Good, that one was not too long.', 'Nice and brief!',
    'Quick enough for a sleepy kid. Thank you.', 'Exactly the length I like.'],
  heldOut: ['Snappy and sweet, thanks!', 'Over in a minute, perfect.'],
};
export const MOOD_COMPLAINTS: Parts = {
  train: ['That was a bit too sad for her.', 'Can you keep the next one happy?', 'He got scared by that part.', 'No crying in the next one, please.',
    'Please, nothing scary at bedtime.', 'Why did it have to be so sad?', 'She did not like the part where he cried.', 'Make it a happy one next time.',
    'Too sad for a little kid.', 'That part made her cry.', 'Can we have a story where nobody gets hurt?', 'Something more cheerful, please.',
    'He hates it when someone is sad.', 'That was gloomy. A happier one next time?', 'Nothing sad please, she is only three.',
    'The scary bit kept him awake.', 'Keep the sad parts out, please.', 'She wants stories where everyone is happy.'],
  heldOut: ['Less gloom next time, please.', 'That part upset my little girl.', 'A bit dark for bedtime.'],
};
export const MOOD_PRAISE: Parts = {
  train: ['So happy and calm, thank you!', 'Nice and cheerful, just right.', 'No scary bits, perfect.', 'A happy story, he loved it.',
    'Such a gentle story, thanks!', 'All smiles here, thank you.', 'Happy from start to end, lovely.', 'Nothing sad in it, thank you!',
    'That was so cheerful, she loved it.', 'A calm, happy one. Perfect.', 'Everyone was happy, just how we like it.', 'Sweet and gentle, thanks.'],
  heldOut: ['Sunny and sweet, thanks.', 'What a peaceful little story.'],
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
  (v.t ? withTopic(s, v.t) : s.replaceAll('{t}', '')).replaceAll('{p}', v.t ? plural(v.t) : '').replaceAll('{n}', v.n ?? '').replaceAll('{e}', v.e ?? '').replaceAll('{r}', v.r ?? '');

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
  /** corrections without a "no": a preference, a wish or an absence */
  implicitCorrections: { train: string[]; heldOut: string[] };
  /** soft praise, then a correction ("Nice, but …"): the correction is what counts */
  softCorrections: { train: string[]; heldOut: string[] };
  /** preferences alone (praise after a story with the topic, a correction after one without) */
  preferences: { train: string[]; heldOut: string[] };
  /** v8: hints, complaints and praise about a story's length and mood */
  shortHints: { train: string[]; heldOut: string[] };
  happyHints: { train: string[]; heldOut: string[] };
  lengthComplaints: { train: string[]; heldOut: string[] };
  lengthPraise: { train: string[]; heldOut: string[] };
  moodComplaints: { train: string[]; heldOut: string[] };
  moodPraise: { train: string[]; heldOut: string[] };
}

/** Every phrasing set the recipe uses, with placeholders ({t}, {n}, {e}) still in place. */
export function phrasingSets(): PhrasingSets {
  const ends = REQUEST_ENDS;
  // two sets of phrasings as one: training phrasings of either that neither holds out, and both held-out lists
  const union = (a: Parts, b: Parts): Parts => {
    const held = new Set([...a.heldOut, ...b.heldOut]);
    return { train: [...new Set([...a.train, ...b.train])].filter((x) => !held.has(x)), heldOut: [...held] };
  };
  const trainingOnly = (...parts: string[][]): Parts => ({ train: parts.flat(), heldOut: [] });
  // training: the original parts and the extra ones; held out: exactly the original held-out combinations
  const request = (clauses: Parts, more: string[] = []) => union(
    combine([REQUEST_OPENERS, clauses, ends], sentence),
    combine([trainingOnly(REQUEST_OPENERS.train, REQUEST_OPENERS_MORE), trainingOnly(clauses.train, more), trainingOnly(ends.train, REQUEST_ENDS_MORE)], sentence),
  );
  const withPlain = (clauses: Parts) => combine([PLAIN_REQUESTS, clauses], (p) => `${p[0]} ${p[1][0].toUpperCase()}${p[1].slice(1)}.`);
  // praise, then (as users do) maybe a request for another story: the request after praise is no redo
  const praise = (bodies: Parts, another: Parts) => combine([PRAISE_OPENERS, bodies, PRAISE_CLOSERS, another], (p) => {
    const body = /[.!]$/.test(p[0]) ? p[1][0].toUpperCase() + p[1].slice(1) : p[1];
    const text = sentence([sentence([p[0], body]) + p[2], p[3]]);
    return text[0].toUpperCase() + text.slice(1);
  });
  const positive = union(combine([POSITIVE, ANOTHER], sentence), praise(PRAISE_BODIES, PRAISE_THEN));
  // soft praise, then the complaint that counts ("Nice, but there was no dog.")
  const softened = (complaints: Parts) => combine([SOFT_LEADS, complaints], (p) => sentence([p[0], /^I\b/.test(p[1]) ? p[1] : p[1][0].toLowerCase() + p[1].slice(1)]));
  const implicit: Parts = { train: [...PREFERENCES.train, ...WISHES.train, ...ABSENCES.train], heldOut: [...PREFERENCES.heldOut, ...WISHES.heldOut, ...ABSENCES.heldOut] };
  return {
    topicRequests: request(TOPIC_CLAUSES, TOPIC_CLAUSES_MORE),
    nameRequests: request(NAME_CLAUSES, NAME_CLAUSES_MORE),
    topicNameRequests: request(TOPIC_NAME_CLAUSES),
    shortRequests: withPlain(SHORT_CLAUSES),
    happyRequests: withPlain(HAPPY_CLAUSES),
    plainRequests: { train: PLAIN_REQUESTS.train, heldOut: PLAIN_REQUESTS.heldOut },
    topicHints: { train: HINT_TOPIC.train, heldOut: HINT_TOPIC.heldOut },
    nameHints: { train: HINT_NAME.train, heldOut: HINT_NAME.heldOut },
    topicCorrections: combine([CORRECTION_PREFIXES, CORRECTION_TOPIC], (p) => sentence([p[0], p[0].endsWith('.') ? p[1][0].toUpperCase() + p[1].slice(1) : p[1]])),
    nameCorrections: combine([CORRECTION_PREFIXES, CORRECTION_NAME], (p) => sentence([p[0], p[0].endsWith('.') ? p[1][0].toUpperCase() + p[1].slice(1) : p[1]])),
    positive,
    positiveTopic: union({ train: POSITIVE_TOPIC.train, heldOut: POSITIVE_TOPIC.heldOut }, praise(PRAISE_TOPIC_BODIES, { train: [''], heldOut: [] })),
    neutral: union({ train: NEUTRAL.train, heldOut: NEUTRAL.heldOut }, NEUTRAL_MORE),
    arithmetic: { train: ARITH_QUESTIONS.train, heldOut: ARITH_QUESTIONS.heldOut },
    implicitCorrections: implicit,
    softCorrections: softened({ train: [...implicit.train, ...CORRECTION_TOPIC.train], heldOut: [...implicit.heldOut, ...CORRECTION_TOPIC.heldOut] }),
    preferences: { train: PREFERENCES.train, heldOut: PREFERENCES.heldOut },
    shortHints: { train: HINT_SHORT.train, heldOut: HINT_SHORT.heldOut },
    happyHints: { train: HINT_HAPPY.train, heldOut: HINT_HAPPY.heldOut },
    // soft praise before a complaint is still a complaint ("Cute, but it went on and on.")
    lengthComplaints: union(LENGTH_COMPLAINTS, softened(LENGTH_COMPLAINTS)),
    lengthPraise: union(LENGTH_PRAISE, combine([LENGTH_PRAISE, ANOTHER], sentence)),
    moodComplaints: union(MOOD_COMPLAINTS, softened(MOOD_COMPLAINTS)),
    moodPraise: union(MOOD_PRAISE, combine([MOOD_PRAISE, ANOTHER], sentence)),
  };
}
