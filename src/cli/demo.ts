// `openclaw-rl demo`: a short, visible personalization session — the server, a simulated user who
// wants stories about a dog, the judge and the learning loop — with a live satisfaction line.
import { resolve } from 'node:path';
import { defineCommand } from './command.ts';
import { personalizeOptions, personalizeRuns, checkPersonalize } from './bench.ts';

export const demoCommand = defineCommand({
  name: 'demo',
  summary: 'watch a simulated user teach the model what it likes (server, judge and training in one process)',
  description: 'A simulated user asks for stories and says what it thinks of each one; the server judges the replies, trains a ' +
    'LoRA adapter in the background and serves each new version, and the held-out satisfaction is printed as it rises.',
  options: personalizeOptions({ conversations: 128, out: 'openclaw-rl-demo' }),
  check: checkPersonalize,
  examples: ['openclaw-rl demo --model /path/to/stories260k-hf', 'openclaw-rl demo --persona short-stories --conversations 64'],
  run: async (o) => {
    const { writeReport } = await import('../bench/personalize.ts');
    process.stderr.write(`openclaw-rl demo: a simulated user asks for stories and says what it thinks of each one; the server judges\n` +
      `the replies, trains a LoRA adapter in the background and serves each new version. Watch the held-out satisfaction rise.\n\n`);
    const runs = await personalizeRuns(o, (line) => process.stderr.write(`${line}\n`));
    const files = await writeReport(resolve(o.out), runs);
    const r = runs[0];
    process.stderr.write(`\n${r.persona}: satisfaction ${(r.baseRate * 100).toFixed(0)}% → ${(r.finalRate * 100).toFixed(0)}%, satisfied-and-fluent ${(r.baseSatisfiedAndFluent * 100).toFixed(0)}% → ${(r.finalSatisfiedAndFluent * 100).toFixed(0)}%, KL to base ${r.finalKlToBase.toFixed(3)} after ${r.conversations} conversations (${r.steps} training steps, ${r.wallSeconds} s).\nPlot: ${files[2]}\n`);
  },
});
