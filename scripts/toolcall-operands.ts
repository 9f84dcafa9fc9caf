// What a model can do on the tool-call environment, by the form of the arithmetic: accuracy at T = 1
// (held-out wordings, `samples` episodes per task) for one- to three-digit operands, three operands,
// negative results and word problems. Used to choose the curriculum's difficulty levels.
// Usage: node scripts/toolcall-operands.ts [MODEL_DIR] [TASKS_PER_FORM=32] [SAMPLES=4]
import { homedir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../src/engine/embedded/engine.ts';
import { LocalPool } from '../src/env/pool.ts';
import { envFactory } from '../src/env/tasks.ts';
import { agentEval } from '../src/agent/eval.ts';
import { rng } from '../src/env/arithmetic.ts';

const dir = process.argv[2] ?? join(homedir(), '.cache/openclaw-rl/models/stories260k-chat');
const perForm = Number(process.argv[3] ?? 32), samples = Number(process.argv[4] ?? 4);
const int = (r: () => number, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const ask = (i: number, e: string) => (i % 2 ? 'What do you get for {e}?' : 'Can you calculate {e}?').replace('{e}', e);

/** Each form: the question and the answer of its i-th task. */
const FORMS: Record<string, (r: () => number, i: number) => [string, number]> = {
  '1-digit a + b': (r, i) => { const a = int(r, 1, 9), b = int(r, 1, 9); return [ask(i, `${a} + ${b}`), a + b]; },
  '1-digit a × b': (r, i) => { const a = int(r, 2, 9), b = int(r, 2, 9); return [ask(i, `${a} * ${b}`), a * b]; },
  '2-digit a + b': (r, i) => { const a = int(r, 10, 99), b = int(r, 10, 99); return [ask(i, `${a} + ${b}`), a + b]; },
  '2-digit a − b (b ≤ a)': (r, i) => { const x = int(r, 10, 99), y = int(r, 10, 99); return [ask(i, `${Math.max(x, y)} - ${Math.min(x, y)}`), Math.abs(x - y)]; },
  '2-digit a × b (b ≤ 12)': (r, i) => { const a = int(r, 10, 99), b = int(r, 2, 12); return [ask(i, `${a} * ${b}`), a * b]; },
  '2-digit a × 2-digit b': (r, i) => { const a = int(r, 13, 99), b = int(r, 13, 99); return [ask(i, `${a} * ${b}`), a * b]; },
  '3-digit a + 2-digit b': (r, i) => { const a = int(r, 100, 999), b = int(r, 10, 99); return [ask(i, `${a} + ${b}`), a + b]; },
  '3-digit a + 3-digit b': (r, i) => { const a = int(r, 100, 999), b = int(r, 100, 999); return [ask(i, `${a} + ${b}`), a + b]; },
  '2-digit a + b + c': (r, i) => { const a = int(r, 10, 99), b = int(r, 10, 99), c = int(r, 1, 9); return [ask(i, `${a} + ${b} + ${c}`), a + b + c]; },
  '2-digit a − b < 0': (r, i) => { const a = int(r, 10, 49), b = int(r, 50, 99); return [ask(i, `${a} - ${b}`), a - b]; },
  '2-digit word problem +': (r) => { const a = int(r, 10, 99), b = int(r, 10, 99); return [`Tom has ${a} apples. Tom gets ${b} more. How many apples does Tom have now?`, a + b]; },
};

const engine = await EmbeddedEngine.load(dir, {});
const pool = new LocalPool(envFactory('toolcall', { python: false }), { capacity: 4, log: () => {} });
try {
  console.log(`model ${dir}: ${perForm} tasks per form × ${samples} samples at T = 1, max 96 tokens a turn`);
  for (const [name, make] of Object.entries(FORMS)) {
    const tasks = Array.from({ length: perForm }, (_, i) => { const [question, answer] = make(rng(9000 + i * 7), i); return { key: `${name}-${i}`, question, answer }; });
    const r = await agentEval(engine, null, pool, tasks, { workers: 4, samples, ks: [1], maxTokensPerTurn: 96, temperature: 1, topP: 1, seed: 1, runId: 'operands', allocateTimeoutMs: 60_000 });
    console.log(`${name.padEnd(24)} accuracy ${(100 * r.accuracy).toFixed(1)}%  tool use ${(100 * r.toolUse).toFixed(0)}%`);
  }
} finally { await pool.shutdown(); await engine.close(); }
