// The stories260k-chat recipe end to end: chat vocabulary → the base model's story pool → generated
// conversations → supervised fine-tuning with the project's trainer → a complete model folder with a
// manifest. Written to a temporary sibling and renamed into place, so a crash never leaves a
// half-built model where the cache expects a whole one. Deterministic for a seed.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, copyFileSync, readdirSync } from 'node:fs';
import { homedir, cpus, loadavg } from 'node:os';
import { dirname, join, basename } from 'node:path';
import { EmbeddedEngine } from '../../engine/embedded/engine.ts';
import { addChatVocabulary } from './vocab.ts';
import { drawStoryPool, TOPIC_OPENERS, LATE_TOPIC_OPENERS, type PoolOptions } from './stories.ts';
import { ConversationGenerator, FULL_MIX, KINDS, toJsonl, type Mix } from './data.ts';
import { phrasingSets } from './phrasings.ts';
import { trainOnConversations, type TrainSettings } from './train.ts';

/** Bump when the recipe changes what it builds: a cached model of another version is rebuilt. */
export const RECIPE_VERSION = 6;
export const MODEL_NAME = 'stories260k-chat';

/** The cache root: $OPENCLAW_RL_CACHE, else ~/.cache/openclaw-rl. */
export function cacheRoot(): string {
  return process.env.OPENCLAW_RL_CACHE ?? join(homedir(), '.cache', 'openclaw-rl');
}
export const defaultChatModelDir = () => join(cacheRoot(), 'models', MODEL_NAME);

export interface RecipeConfig {
  pool: Omit<PoolOptions, 'seed' | 'onProgress'>;
  mix: Mix;
  train: TrainSettings;
}

export const FULL_RECIPE: RecipeConfig = {
  pool: { free: 1000, perTopic: 40, perName: 20, topicNames: 120, maxTokens: 90, maxWords: 35, temperature: 0.8, topicOpeners: [...TOPIC_OPENERS, ...LATE_TOPIC_OPENERS] },
  mix: FULL_MIX,
  // v3: 3 epochs of small batches (2,436 steps) under a warm-up + cosine schedule; v2 trained 189 steps of 4,096
  // tokens at a constant 1e-3 and its eval loss was still falling (docs/benchmarks.md has both builds side by side)
  // v4: 4 epochs of the larger v4 mix (5,132 steps); see docs/benchmarks.md "Recipe v4"
  // v5: the tokens that carry a request's topic and the numbers a tool conversation copies weigh 5× in the loss, and
  // 3 epochs (3,849 steps) are enough; see docs/benchmarks.md "Recipe v5"
  // v6: 118 topics instead of 12 (phrasings.ts, TOPICS) and a larger mix to match; see docs/benchmarks.md "Recipe v6"
  // (v7, scene openings for sky and place nouns, was built, measured and not adopted: "Recipe v7 tried")
  // (v8, hints, corrections and judge cases about a story's length and mood, was built, measured and not adopted:
  // "Recipe v8 tried"; its conversation kinds stay in data.ts at 0)
  train: { epochs: 3, learningRate: 3e-3, batchTokens: 1024, loraRank: 'full', schedule: 'cosine', warmupSteps: 50, topicTokenWeight: 5, copyTokenWeight: 5 },
};

/** A few percent of the full recipe: the same pipeline in about a minute (tests, determinism checks). */
export const QUICK_RECIPE: RecipeConfig = {
  pool: { free: 120, perTopic: 2, perName: 3, topicNames: 12, maxTokens: 90, maxWords: 35, temperature: 0.8 },
  mix: Object.fromEntries(KINDS.map((k) => [k, FULL_MIX[k] ? Math.max(4, Math.round(FULL_MIX[k] / 50)) : 0])) as Mix,
  train: { epochs: 1, learningRate: 1e-3, batchTokens: 2048, loraRank: 'full', topicTokenWeight: 5, copyTokenWeight: 5 },
};

export interface BuildOptions {
  base: string;
  out: string;
  seed: number;
  quick?: boolean;
  /** a recipe of one's own (tests use a tiny one); default FULL_RECIPE, or QUICK_RECIPE with `quick` */
  recipe?: RecipeConfig;
  log?: (line: string) => void;
}

export interface Manifest {
  name: string;
  recipeVersion: number;
  seed: number;
  quick: boolean;
  base: { dir: string; weightsSha256: string };
  weightsSha256: string;
  config: RecipeConfig;
  data: { conversations: number; byKind: Record<string, number>; pool: unknown };
  heldOutPhrasings: Record<string, string[]>;
  training: unknown;
  timings: {
    vocabularySeconds: number; poolSeconds: number; dataSeconds: number; trainSeconds: number; totalSeconds: number;
    /** CPU time of the whole build (all threads): on an idle machine, wall time ≈ this / cores */
    cpuSeconds: number;
  };
  machine: { cpus: number; loadAverageAtStart: number[]; loadAverageAtEnd: number[] };
  builtAt: string;
}

export const sha256File = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** The manifest of a built model folder, or null when there is none (or it does not parse). */
export function readManifest(dir: string): Manifest | null {
  try { return JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest; } catch { return null; }
}

/** A folder holds a complete model of this recipe version. */
export function isCurrentBuild(dir: string): boolean {
  const m = readManifest(dir);
  return !!m && m.recipeVersion === RECIPE_VERSION && existsSync(join(dir, 'model.safetensors'));
}

/** Work folders of builds whose process is gone (killed or crashed) beside `out`. */
export function staleWorkFolders(out: string): string[] {
  const parent = dirname(out), prefix = `.${basename(out)}.build-`;
  if (!existsSync(parent)) return [];
  return readdirSync(parent).filter((f) => f.startsWith(prefix)).filter((f) => {
    const pid = Number(f.slice(prefix.length));
    if (!Number.isInteger(pid) || pid === process.pid) return false;
    try { process.kill(pid, 0); return false; } catch { return true; }
  }).map((f) => join(parent, f));
}

export async function buildChatModel(o: BuildOptions): Promise<Manifest> {
  const log = o.log ?? (() => {});
  for (const stale of staleWorkFolders(o.out)) { log(`removing ${stale} (left by a build that did not finish)`); rmSync(stale, { recursive: true, force: true }); }
  const recipe = o.recipe ?? (o.quick ? QUICK_RECIPE : FULL_RECIPE);
  const started = performance.now(), loadAtStart = loadavg(), cpuAtStart = process.cpuUsage();
  const work = join(dirname(o.out), `.${basename(o.out)}.build-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const t0 = performance.now();
    const init = join(work, 'init');
    const vocab = addChatVocabulary(o.base, init, o.seed);
    log(`vocabulary: ${vocab.vocabSize} tokens (added ${Object.keys(vocab.addedIds).join(' ')})`);
    const t1 = performance.now();

    const baseEngine = await EmbeddedEngine.load(o.base);
    let lastShown = 0;
    const pool = await drawStoryPool(baseEngine, {
      ...recipe.pool, seed: o.seed,
      onProgress: (done, total) => { if (done === total || performance.now() - lastShown > 5000) { lastShown = performance.now(); log(`story pool: ${done}/${total} samples`); } },
    }).finally(() => baseEngine.close());
    log(`story pool: ${pool.stats.samples} samples, ${pool.stats.tokens} tokens in ${pool.stats.seconds.toFixed(1)} s`);
    const t2 = performance.now();

    const conversations = new ConversationGenerator(pool, o.seed + 1).conversations(recipe.mix);
    writeFileSync(join(work, 'train.jsonl'), conversations.map(toJsonl).join('\n') + '\n');
    const byKind: Record<string, number> = {};
    for (const c of conversations) byKind[c.kind] = (byKind[c.kind] ?? 0) + 1;
    log(`data: ${conversations.length} conversations`);
    const t3 = performance.now();

    const model = join(work, 'model');
    const training = await trainOnConversations(init, model, conversations, { ...recipe.train, seed: o.seed, log });
    const t4 = performance.now();

    const sets = phrasingSets();
    const manifest: Manifest = {
      name: MODEL_NAME, recipeVersion: RECIPE_VERSION, seed: o.seed, quick: recipe !== FULL_RECIPE,
      base: { dir: o.base, weightsSha256: sha256File(join(o.base, 'model.safetensors')) },
      weightsSha256: sha256File(join(model, 'model.safetensors')),
      config: recipe,
      data: { conversations: conversations.length, byKind, pool: pool.stats },
      heldOutPhrasings: Object.fromEntries(Object.entries(sets).map(([k, v]) => [k, v.heldOut])),
      training,
      timings: {
        vocabularySeconds: (t1 - t0) / 1000, poolSeconds: (t2 - t1) / 1000, dataSeconds: (t3 - t2) / 1000,
        trainSeconds: (t4 - t3) / 1000, totalSeconds: (performance.now() - started) / 1000,
        cpuSeconds: (() => { const u = process.cpuUsage(cpuAtStart); return (u.user + u.system) / 1e6; })(),
      },
      machine: { cpus: cpus().length, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg() },
      builtAt: new Date().toISOString(),
    };
    writeFileSync(join(model, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    copyFileSync(join(work, 'train.jsonl'), join(model, 'train.jsonl'));
    // swap the finished folder into place
    mkdirSync(dirname(o.out), { recursive: true });
    const old = `${work}-old`;
    if (existsSync(o.out)) renameSync(o.out, old);
    renameSync(model, o.out);
    rmSync(old, { recursive: true, force: true });
    log(`wrote ${o.out} in ${manifest.timings.totalSeconds.toFixed(0)} s`);
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The chat model folder: `dir` when it holds a current build, else build it there first. */
export async function ensureChatModel(o: BuildOptions): Promise<string> {
  if (isCurrentBuild(o.out)) return o.out;
  await buildChatModel(o);
  return o.out;
}

