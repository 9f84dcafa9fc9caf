// The answers of the recipe are the base model's own stories. Two ways to get one that satisfies a
// request: rejection sampling (sample freely, keep the stories that happen to mention the topic),
// and seeding (the base model continues a programmatic opening that mentions it, e.g. "One day, a
// dog"). Samples run batched through the embedded engine with fixed seeds; stories are cut at a
// sentence end so every answer finishes cleanly.
import { collect, type Engine } from '../../engine/types.ts';
import { Rng } from '../../engine/embedded/rng.ts';
import { TOPICS, NAMES, SAD_WORDS, plural, withTopic } from './phrasings.ts';

export const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

export function mentionsTopic(text: string, topic: string): boolean {
  const w = new Set(words(text));
  return w.has(topic) || w.has(plural(topic));
}
export const mentionsName = (text: string, name: string) => new RegExp(`\\b${name}\\b`).test(text);
export const SHORT_WORDS = 25;
export const isShort = (text: string) => words(text).length <= SHORT_WORDS;
export const isHappy = (text: string) => !words(text).some((w) => SAD_WORDS.includes(w));

/**
 * The longest prefix of `text` that ends a sentence and has at most `maxWords` words (null when even
 * the first sentence is longer, or the text has no sentence end). A closing quote stays with its sentence.
 */
export function cutAtSentence(text: string, maxWords: number): string | null {
  const t = text.replace(/\s+/g, ' ').trim();
  let best: string | null = null;
  for (const m of t.matchAll(/[.!?]["”]?(?=\s|$)/g)) {
    const candidate = t.slice(0, m.index + m[0].length);
    if (words(candidate).length > maxWords) break;
    best = candidate;
  }
  // an unbalanced quote reads as a broken answer
  if (best && (best.match(/"/g)?.length ?? 0) % 2 === 1) {
    const lastQuote = best.lastIndexOf('"');
    const shorter = best.slice(0, lastQuote).match(/^[\s\S]*[.!?]["”]?(?=\s|$)/);
    best = shorter ? shorter[0] : null;
  }
  return best && words(best).length >= 4 ? best : null;
}

export interface StoryPool {
  /** free samples from the start of a story */
  free: string[];
  /** stories that mention each topic: free samples that happen to, then seeded ones */
  byTopic: Record<string, string[]>;
  /** stories with a character of each name */
  byName: Record<string, string[]>;
  /** stories about a topic whose character has a name ("a dog named Max") */
  byTopicName: { topic: string; name: string; text: string }[];
  stats: { samples: number; tokens: number; seconds: number; rejectedNoSentence: number; freeWithTopic: Record<string, number> };
}

export interface PoolOptions {
  seed: number;
  /** free samples drawn */
  free: number;
  /** seeded stories per topic and per name */
  perTopic: number;
  /** openings for the topic stories (default TOPIC_OPENERS) */
  topicOpeners?: readonly string[];
  perName: number;
  topicNames: number;
  maxTokens: number;
  maxWords: number;
  temperature: number;
  onProgress?: (done: number, total: number) => void;
}

export const TOPIC_OPENERS = ['Once upon a time, there was a {t}', 'One day, a little {t}', 'Once upon a time, there was a big {t}', '{n} had a {t}',
  '{n} saw a {t}', 'There was once a {t}', 'One day, {n} found a {t}', 'Once upon a time, a {t}'];
/**
 * Openings that start the way the model starts most stories ("…a little girl named Lily.") and bring the topic
 * in afterwards: v3 failed topic requests mostly by opening with that habit and never coming back to the topic.
 * The recipe seeds with these too; the benchmark's pool keeps TOPIC_OPENERS alone.
 */
export const LATE_TOPIC_OPENERS = ['Once upon a time, there was a little girl named {n}. She had a {t}', 'Once upon a time, there was a boy named {n}. He saw a {t}',
  'One day, a little girl named {n} went to the park. She saw a {t}', 'One day, {n} went for a walk. {n} found a {t}'];
const NAME_OPENERS = ['Once upon a time, there was a little girl named {n}', 'Once upon a time, there was a boy named {n}', 'One day, {n}',
  'There was a kid named {n}', '{n} was a happy child'];
const TOPIC_NAME_OPENERS = ['Once upon a time, there was a {t} named {n}', 'There was a little {t} called {n}', 'Once upon a time, a {t} named {n}'];

/** Draws the pool: `free` free samples, then seeded ones for every topic, name and a few topic+name pairs. */
export async function drawStoryPool(engine: Engine, o: PoolOptions): Promise<StoryPool> {
  const t0 = performance.now();
  const rng = new Rng(o.seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rng.next() * xs.length)];
  type Job = { opener: string; kind: 'free' | 'topic' | 'name' | 'topicName'; topic?: string; name?: string };
  const jobs: Job[] = [];
  for (let i = 0; i < o.free; i++) jobs.push({ opener: '', kind: 'free' });
  const topicOpeners = o.topicOpeners ?? TOPIC_OPENERS;
  for (const t of TOPICS) for (let i = 0; i < o.perTopic; i++) jobs.push({ opener: withTopic(pick(topicOpeners), t).replaceAll('{n}', pick(NAMES)), kind: 'topic', topic: t });
  for (const n of NAMES) for (let i = 0; i < o.perName; i++) jobs.push({ opener: pick(NAME_OPENERS).replace('{n}', n), kind: 'name', name: n });
  for (let i = 0; i < o.topicNames; i++) {
    const t = pick(TOPICS), n = pick(NAMES);
    jobs.push({ opener: withTopic(pick(TOPIC_NAME_OPENERS), t).replace('{n}', n), kind: 'topicName', topic: t, name: n });
  }
  const seeds = jobs.map(() => Math.floor(rng.next() * 2 ** 31));
  const pool: StoryPool = {
    free: [], byTopic: Object.fromEntries(TOPICS.map((t) => [t, []])), byName: Object.fromEntries(NAMES.map((n) => [n, []])), byTopicName: [],
    stats: { samples: jobs.length, tokens: 0, seconds: 0, rejectedNoSentence: 0, freeWithTopic: {} },
  };
  let done = 0;
  // all requests at once: the engine batches them into shared forward passes; results keep job order
  const results = await Promise.all(jobs.map(async (job, i) => {
    const prompt = engine.tokenizer.encode(job.opener, true);
    const r = await collect(engine.sample(prompt, { maxTokens: o.maxTokens, temperature: o.temperature, topP: 1, topK: 0, seed: seeds[i], priority: 'low' }));
    o.onProgress?.(++done, jobs.length);
    return r;
  }));
  results.forEach((r, i) => {
    const job = jobs[i];
    pool.stats.tokens += r.ids.length;
    const story = cutAtSentence(job.opener + r.text, o.maxWords);
    if (!story) { pool.stats.rejectedNoSentence++; return; }
    if (job.kind === 'free') pool.free.push(story);
    else if (job.kind === 'topic') pool.byTopic[job.topic!].push(story);
    else if (job.kind === 'name') pool.byName[job.name!].push(story);
    else if (mentionsName(story, job.name!)) pool.byTopicName.push({ topic: job.topic!, name: job.name!, text: story });
  });
  // rejection sampling over the free samples: the ones that mention a topic or a name answer those requests too
  for (const t of TOPICS) {
    const hits = pool.free.filter((s) => mentionsTopic(s, t));
    pool.stats.freeWithTopic[t] = hits.length;
    pool.byTopic[t].unshift(...hits);
  }
  for (const n of NAMES) pool.byName[n].unshift(...pool.free.filter((s) => mentionsName(s, n)));
  pool.stats.seconds = (performance.now() - t0) / 1000;
  return pool;
}
