// `openclaw-rl demo`: a short, visible personalization session — the server, a simulated user who
// wants stories about a dog, the judge and the learning loop — with a live satisfaction line.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { PERSONALIZE_OPTIONS, personalizeRuns } from './bench.ts';
import { writeReport } from '../bench/personalize.ts';

export async function demoCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: PERSONALIZE_OPTIONS });
  process.stderr.write(`openclaw-rl demo: a simulated user asks for stories and says what it thinks of each one; the server judges\n` +
    `the replies, trains a LoRA adapter in the background and serves each new version. Watch the held-out satisfaction rise.\n\n`);
  const runs = await personalizeRuns({ conversations: '128', 'eval-every': '16', persona: 'dog-lover', method: 'binary', ...o }, (line) => process.stderr.write(`${line}\n`));
  const files = await writeReport(resolve(o.out ?? 'openclaw-rl-demo'), runs);
  const r = runs[0];
  process.stderr.write(`\n${r.persona}: satisfaction ${(r.baseRate * 100).toFixed(0)}% → ${(r.finalRate * 100).toFixed(0)}% after ${r.conversations} conversations (${r.steps} training steps, ${r.wallSeconds} s).\nPlot: ${files[2]}\n`);
}
