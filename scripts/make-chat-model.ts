// `npm run make:chat-model`: build stories260k-chat from ../shared/models/stories260k-hf with the
// project's own trainer (src/recipes/chat-model/). Does nothing when the folder already holds a build of
// the current recipe version (use --force to rebuild). See docs/chat-model.md.
import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const HELP = `Usage: npm run make:chat-model -- [--out DIR] [--seed N] [--quick] [--force] [--base DIR]

Builds the tiny chat model stories260k-chat (under 10 minutes on 2 cores; --quick: about a minute,
for tests). Weights are never committed: they are built into a cache folder.

  --out DIR    where to write the model (default: $OPENCLAW_RL_CACHE/models/stories260k-chat,
               OPENCLAW_RL_CACHE defaults to ~/.cache/openclaw-rl)
  --seed N     the recipe's seed (default 1); the same seed gives byte-identical weights
  --quick      a small version of the recipe (same pipeline, a few percent of the data and steps)
  --force      rebuild even when the folder holds a current build
  --base DIR   the base model (default: ../shared/models/stories260k-hf, or $OPENCLAW_RL_BASE_MODEL)
`;

let args;
try {
  args = parseArgs({ options: {
    out: { type: 'string' }, seed: { type: 'string' }, quick: { type: 'boolean' }, force: { type: 'boolean' }, base: { type: 'string' }, help: { type: 'boolean', short: 'h' },
  }, strict: true }).values;
} catch (e) {
  process.stderr.write(`make:chat-model: ${(e as Error).message}\n\n${HELP}`);
  process.exit(2);
}
if (args.help) { process.stdout.write(HELP); process.exit(0); }
const seed = args.seed === undefined ? 1 : Number(args.seed);
if (!Number.isInteger(seed) || seed < 0) { process.stderr.write(`make:chat-model: --seed expects a non-negative integer, got '${args.seed}'\n`); process.exit(2); }
const base = resolve(args.base ?? process.env.OPENCLAW_RL_BASE_MODEL ?? join(root, '..', 'shared', 'models', 'stories260k-hf'));
if (!existsSync(join(base, 'model.safetensors'))) { process.stderr.write(`make:chat-model: no base model at ${base} (pass --base DIR)\n`); process.exit(2); }

const { buildChatModel, isCurrentBuild, defaultChatModelDir } = await import('../src/recipes/chat-model/build.ts');
const out = resolve(args.out ?? defaultChatModelDir());
if (!args.force && isCurrentBuild(out)) {
  process.stderr.write(`make:chat-model: ${out} already holds a current build (--force rebuilds)\n`);
  process.exit(0);
}
const log = (line: string) => process.stderr.write(`make:chat-model: ${line}\n`);
const m = await buildChatModel({ base, out, seed, quick: args.quick, log });
log(`done: ${m.timings.totalSeconds.toFixed(0)} s, ${m.timings.cpuSeconds.toFixed(0)} CPU-seconds (pool ${m.timings.poolSeconds.toFixed(0)} s, training ${m.timings.trainSeconds.toFixed(0)} s), load average ${m.machine.loadAverageAtStart.map((x) => x.toFixed(1)).join(' ')} → ${m.machine.loadAverageAtEnd.map((x) => x.toFixed(1)).join(' ')}, weights sha256 ${m.weightsSha256.slice(0, 16)}…`);
