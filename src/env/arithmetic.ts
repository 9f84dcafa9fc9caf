// Procedurally generated arithmetic tasks for the tool-call environment, with their verifier.
// Two kinds: bare expressions ("What is 417 + 385?") and one- or two-step word problems. The split
// is by wording: train and held-out tasks use disjoint question templates (and disjoint seeds), so
// held-out accuracy measures a skill, not memorised sentences. Pure and deterministic per seed.

export type Split = 'train' | 'heldout';
export type Op = '+' | '-' | '*' | '/';

export interface ArithmeticTask {
  key: string;
  kind: 'arithmetic';
  split: Split;
  question: string;
  /** the expression that answers it (for analysis; never shown to the policy) */
  expression: string;
  answer: number;
  /** difficulty level (1–5) of leveled tasks */
  difficulty?: number;
}

/** A small deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: () => number, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

const EXPRESSION_WORDINGS: Record<Split, string[]> = {
  train: ['What is {e}?', 'Compute {e}.', 'Calculate {e}.', 'How much is {e}?', 'Work out {e}.'],
  heldout: ['Can you calculate {e}?', 'What do you get for {e}?'],
};

const NAMES = ['Tom', 'Lily', 'Sam', 'Mia', 'Ben', 'Anna', 'Max', 'Zoe'];
const ITEMS = ['apples', 'stickers', 'marbles', 'books', 'coins', 'cookies', 'shells', 'cards'];

/** Word-problem templates per operation: [template, how its numbers map to the expression]. */
const WORD_PROBLEMS: Record<Split, Record<Op, string[]>> = {
  train: {
    '+': ['{n} has {a} {i}. {n} gets {b} more. How many {i} does {n} have now?', 'There are {a} {i} in a box and {b} in a bag. How many {i} are there in all?'],
    '-': ['{n} has {a} {i} and gives away {b}. How many {i} are left?', 'A jar holds {a} {i}. {n} takes {b} out. How many {i} stay in the jar?'],
    '*': ['{n} has {a} bags with {b} {i} in each. How many {i} is that?', 'Each shelf holds {b} {i}. How many {i} fit on {a} shelves?'],
    '/': ['{n} shares {a} {i} equally among {b} friends. How many {i} does each friend get?', '{a} {i} are packed {b} to a box. How many boxes are filled?'],
  },
  heldout: {
    '+': ['After finding {b} {i}, {n} owns {a} plus those. What is the total number of {i}?'],
    '-': ['Of {a} {i}, {b} were lost. What number of {i} remains?'],
    '*': ['{a} children each bring {b} {i}. What is the total count of {i}?'],
    '/': ['If {a} {i} are split evenly into {b} groups, what is the size of each group?'],
  },
};

/** Operands for an operation: 2–3 digit numbers, differences positive, divisions exact. */
function operands(r: () => number, op: Op): [number, number] {
  if (op === '+') return [int(r, 12, 999), int(r, 12, 999)];
  if (op === '-') { const a = int(r, 50, 999); return [a, int(r, 11, a - 1)]; }
  if (op === '*') return [int(r, 3, 99), int(r, 3, 99)];
  const b = int(r, 3, 29), q = int(r, 3, 49);
  return [b * q, b];
}

function evaluate(a: number, op: Op, b: number): number {
  return op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : a / b;
}

const OP_TEXT: Record<Op, string> = { '+': '+', '-': '-', '*': '*', '/': '/' };

/**
 * 'mixed': half bare expressions, half word problems; 'expressions': bare expressions only; 'small':
 * bare expressions with two-digit operands and + − × only (a × operand ≤ 12), for very small models.
 */
export type TaskStyle = 'mixed' | 'expressions' | 'small';

function smallOperands(r: () => number, op: Op): [number, number] {
  if (op === '*') return [int(r, 2, 99), int(r, 2, 12)];
  const a = int(r, 2, 99), b = int(r, 2, 99);
  return op === '-' && b > a ? [b, a] : [a, b];
}

export function makeTask(split: Split, seed: number, style: TaskStyle = 'mixed'): ArithmeticTask {
  const r = rng(seed * 2 + (split === 'heldout' ? 1 : 0));
  const op = style === 'small' ? pick(r, ['+', '-', '*'] as const) : pick(r, ['+', '-', '*', '/'] as const);
  const [a, b] = style === 'small' ? smallOperands(r, op) : operands(r, op);
  const expression = `${a} ${OP_TEXT[op]} ${b}`;
  const answer = evaluate(a, op, b);
  const bare = r() < 0.5;
  const question = bare || style !== 'mixed'
    ? pick(r, EXPRESSION_WORDINGS[split]).replaceAll('{e}', expression)
    : pick(r, WORD_PROBLEMS[split][op]).replaceAll('{n}', pick(r, NAMES)).replaceAll('{i}', pick(r, ITEMS)).replaceAll('{a}', String(a)).replaceAll('{b}', String(b));
  return { key: `arith-${style === 'mixed' ? '' : `${style}-`}${split}-${seed}`, kind: 'arithmetic', split, question, expression, answer };
}

/** `count` tasks of a split, seeds start, start+1, … */
export function makeTasks(split: Split, count: number, start = 0, style: TaskStyle = 'mixed'): ArithmeticTask[] {
  return Array.from({ length: count }, (_, i) => makeTask(split, start + i, style));
}

/**
 * The answer a final message gives: the number in `\boxed{…}` when there is one, else the number
 * after "answer is" / "Answer:", else the last number in the message. Null when there is none.
 */
export function extractAnswer(message: string): number | null {
  const text = message.replace(/<tool_call>[\s\S]*?(<\/tool_call>|$)/g, ' ');
  const num = String.raw`-?\d[\d,]*(?:\.\d+)?`;
  const boxed = new RegExp(String.raw`\\boxed\{\s*(${num})\s*\}`).exec(text);
  const stated = new RegExp(String.raw`answer(?:\s+is|:)\s*(${num})`, 'i').exec(text);
  const all = [...text.matchAll(new RegExp(num, 'g'))];
  const s = boxed?.[1] ?? stated?.[1] ?? all.at(-1)?.[0];
  if (s === undefined) return null;
  const v = Number(s.replace(/,/g, ''));
  return Number.isFinite(v) ? v : null;
}

export function isCorrect(message: string, answer: number): boolean {
  const v = extractAnswer(message);
  return v !== null && Math.abs(v - answer) <= 1e-6 * Math.max(1, Math.abs(answer));
}

/**
 * Outcome reward (upstream's ReTool shaping): +1 for a correct answer; a wrong one gets
 * min(−0.6, −1 + (toolCalls − 2)/2 · 0.1), so trying the tools is punished less than guessing
 * (kept at ≥ −1 here, where upstream lets a call-less wrong answer reach −1.1).
 */
export function answerReward(correct: boolean, toolCalls: number): number {
  if (correct) return 1;
  return Math.max(-1, Math.min(-0.6, -1 + ((toolCalls - 2) / 2) * 0.1));
}

/**
 * Difficulty levels of the tool-call tasks, easiest first (the curriculum moves along these). The
 * axis is operand length: a small model copies the question's numbers into its call, and each longer
 * number is a place to miscopy; levels 3 and 4 make each operand three-digit with a growing chance, so
 * the expected difficulty rises in steps, not at one cliff. Measured on stories260k-chat (recipe v4,
 * T = 1, held-out wordings; docs/benchmarks.md): one- and two-digit tasks ~55–65%, any three-digit
 * operand ~0%, so the levels give it about 60, 55, 35, 15 and 0%.
 */
export const LEVELS = [
  '1: one-digit a + b, a − b, a × b', '2: two-digit a + b, a − b, a × b (× by at most 12)',
  '3: as 2, each operand three-digit with chance 1/4', '4: as 2, each operand three-digit with chance 1/2',
  '5: three-digit +, −, ×, ÷ and word problems',
] as const;
export const MAX_LEVEL = LEVELS.length;

/** The chance that an operand is three-digit, at levels 2–4. */
const LONG_OPERAND: Record<number, number> = { 2: 0, 3: 0.25, 4: 0.5 };

/** A task of a given difficulty level (1–5); the split keeps its own wordings at every level. */
export function makeLeveledTask(split: Split, seed: number, level: number): ArithmeticTask {
  if (!Number.isInteger(level) || level < 1 || level > MAX_LEVEL) throw new RangeError(`difficulty level must be 1–${MAX_LEVEL}, got ${level}`);
  const key = `arith-L${level}-${split}-${seed}`;
  if (level === 5) {
    // word problems (mixed style, seeds whose task is not a bare expression) or bare three-digit expressions with ÷
    for (let s = seed * 4; ; s++) {
      const t = makeTask(split, s, seed % 2 ? 'mixed' : 'expressions');
      if (seed % 2 === 0 || !t.question.includes(t.expression)) return { ...t, key, difficulty: level };
    }
  }
  const r = rng(seed * 2 + (split === 'heldout' ? 1 : 0) + 31_337 * level);
  const op = pick(r, ['+', '-', '*'] as const);
  const long = LONG_OPERAND[level] ?? 0;
  const operand = (max: number) => (level === 1 ? int(r, 1, 9) : r() < long ? int(r, 100, 999) : int(r, 10, max));
  let [a, b] = op === '*' ? [operand(99), level === 1 ? int(r, 1, 9) : r() < long ? int(r, 100, 999) : int(r, 2, 12)] : [operand(99), operand(99)];
  if (op === '-' && b > a) [a, b] = [b, a];
  const expression = `${a} ${op} ${b}`;
  const question = pick(r, EXPRESSION_WORDINGS[split]).replaceAll('{e}', expression);
  return { key, kind: 'arithmetic', split, question, expression, answer: evaluate(a, op, b), difficulty: level };
}

/** The parts of the expression-disjoint task sets: training, validation (to choose settings) and held-out (to report). */
export type ExpressionPart = 'train' | 'val' | 'heldout';
export const EXPRESSION_PARTS: readonly ExpressionPart[] = ['train', 'val', 'heldout'];

/** FNV-1a over the expression's text: a stable hash, the same on every machine and run. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * Which part an expression belongs to, by a hash of its text: 1 in 8 held out, 1 in 8 for
 * validation, the rest for training. A fixed partition of the expressions themselves, so the parts
 * never share one whatever their sizes (`small:train` and `small:heldout` only differ in wording
 * and seed, and do share expressions).
 */
export function expressionPart(expression: string): ExpressionPart {
  const b = fnv1a(expression) % 8;
  return b === 0 ? 'heldout' : b === 1 ? 'val' : 'train';
}

/**
 * `count` tasks of the small style (two-digit + − ×) whose expressions lie in `part`, skipping the
 * first `start`: training tasks use the training wordings; validation and held-out tasks the
 * held-out wordings (so validation stands in for the held-out set, and is never reported as it).
 */
export function makeDisjointTasks(part: ExpressionPart, count: number, start = 0): ArithmeticTask[] {
  const split: Split = part === 'train' ? 'train' : 'heldout';
  const out: ArithmeticTask[] = [];
  for (let seed = 0, found = 0; out.length < count; seed++) {
    const t = makeTask(split, seed, 'small');
    if (expressionPart(t.expression) !== part) continue;
    if (found++ >= start) out.push({ ...t, key: `arith-disjoint-${part}-${found - 1}` });
  }
  return out;
}
