// Task sets for the environments: built-in generators and JSONL task files, and the environment
// registry (`--env toolcall|terminal|swe|gui`).
import { readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, resolve, join, relative } from 'node:path';
import { makeTasks, makeLeveledTask, makeDisjointTasks, rng, MAX_LEVEL, type ExpressionPart, type Split, type TaskStyle } from './arithmetic.ts';
import { toolCallFactory } from './toolcall.ts';
import { terminalFactory, validateTerminalTask, type TerminalTask } from './terminal.ts';
import { sweFactory, validateSweTask } from './swe.ts';
import { makeSweTasks } from './swe-tasks.ts';
import { guiFactory } from './gui.ts';
import { makeGuiTasks, validateGuiTask } from './gui-tasks.ts';
import { EnvRequestError, type EnvFactory, type Task } from './types.ts';
import type { ModelBudget } from './budget.ts';

import { ENV_NAMES } from './names.ts';

export { ENV_NAMES, type EnvName } from './names.ts';

export interface EnvFactoryOptions {
  /** toolcall: offer the sandboxed python tool besides the calculator (default true) */
  python?: boolean;
  /** gui, swe: the served model's context and tokenizer, so prompts and observations fit */
  model?: ModelBudget;
}

export function envFactory(name: string, o: EnvFactoryOptions = {}): EnvFactory {
  if (name === 'toolcall') return toolCallFactory(o.python === false ? { python: false } : {});
  if (name === 'terminal') return terminalFactory();
  if (name === 'swe') return sweFactory({}, o.model);
  if (name === 'gui') return guiFactory({}, undefined, o.model);
  throw new EnvRequestError(`unknown environment '${name}' (known: ${ENV_NAMES.join(', ')})`);
}

/** Small shell tasks with checks: files to create, fix, count and transform. Deterministic per seed. */
export function makeTerminalTasks(split: Split, count: number, start = 0): TerminalTask[] {
  const out: TerminalTask[] = [];
  for (let i = 0; i < count; i++) {
    const seed = start + i;
    const r = rng(seed * 2 + (split === 'heldout' ? 1 : 0) + 7919);
    const word = ['apple', 'river', 'cloud', 'stone', 'tiger', 'maple'][Math.floor(r() * 6)];
    const n = 2 + Math.floor(r() * 7);
    const kind = Math.floor(r() * 4);
    const key = `term-${split}-${seed}`;
    if (kind === 0) {
      out.push({ key, description: `Create a file named ${word}.txt that contains the single line: ${word}`, checks: [
        { name: 'file exists', command: `test -f ${word}.txt` }, { name: 'content', command: `[ "$(cat ${word}.txt)" = "${word}" ]` }] });
    } else if (kind === 1) {
      const lines = Array.from({ length: n }, (_, k) => `${word}-${k}`).join('\n') + '\n';
      out.push({ key, description: `The file data.txt has some lines. Write the number of lines into count.txt.`, files: { 'data.txt': lines }, checks: [
        { name: 'count.txt exists', command: 'test -f count.txt' }, { name: 'count', command: `[ "$(tr -d ' \\n' < count.txt)" = "${n}" ]` }, { name: 'data.txt untouched', command: `[ "$(wc -l < data.txt)" -eq ${n} ]` }] });
    } else if (kind === 2) {
      out.push({ key, description: `Make a folder named ${word} with ${n} empty files in it.`, checks: [
        { name: 'folder', command: `test -d ${word}` }, { name: `${n} files`, command: `[ "$(ls -A ${word} | wc -l)" -eq ${n} ]` }] });
    } else {
      out.push({ key, description: `Write a shell script run.sh that prints ${word} ${n} times, one per line.`, checks: [
        { name: 'script exists', command: 'test -f run.sh' }, { name: 'output', command: `[ "$(sh run.sh)" = "$(yes ${word} | head -n ${n})" ]` }] });
    }
  }
  return out;
}

/**
 * An SWE task may name a repository snapshot (a folder, relative to the task file) instead of
 * listing its files: the folder's files (without .git) become the task's `files`.
 */
function withSnapshot(t: Task, base: string): void {
  if (t.files !== undefined || typeof t.snapshot !== 'string') return;
  const root = resolve(base, t.snapshot);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new EnvRequestError(`swe task ${t.key}: snapshot folder not found: ${root}`);
  const files: Record<string, string> = {};
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (n === '.git') continue;
      if (statSync(p).isDirectory()) walk(p);
      else files[relative(root, p)] = readFileSync(p, 'utf8');
    }
  };
  walk(root);
  t.files = files;
}

/** Built-in tasks of an environment ('expressions': the tool-call tasks without word problems). */
export function builtinTasks(env: string, split: Split, count: number, start = 0, style: TaskStyle = 'mixed'): Task[] {
  if (env === 'toolcall') return makeTasks(split, count, start, style) as unknown as Task[];
  if (env === 'terminal') return makeTerminalTasks(split, count, start);
  if (env === 'swe') return makeSweTasks(split, count, start);
  if (env === 'gui') return makeGuiTasks(split, count, start);
  throw new EnvRequestError(`unknown environment '${env}'`);
}

/**
 * Tasks from a JSONL file (one task object per line, each with a string `key`), or a built-in set:
 * `builtin:train:200` / `builtin:heldout:50` (split, count, optional first seed), and for the
 * tool-call environment `expressions:train:200` (bare expressions, no word problems),
 * `small:train:200` (two-digit operands, + − ×), `level3:train:200` (one difficulty level, 1–5) and
 * `levels:heldout:50` (the levels in turn), and `small-disjoint:train|val|heldout:N` (small tasks whose
 * three parts never share an expression: train on `train`, choose settings on `val`, report `heldout`).
 */
export function loadTasks(env: string, spec: string): Task[] {
  const dj = /^small-disjoint:(train|val|heldout)(?::(\d+))?(?::(\d+))?$/.exec(spec);
  if (dj) {
    if (env !== 'toolcall') throw new EnvRequestError('small-disjoint:… task sets are for the toolcall environment');
    return makeDisjointTasks(dj[1] as ExpressionPart, Number(dj[2] ?? 64), Number(dj[3] ?? 0)) as unknown as Task[];
  }
  const lv = /^(level([1-9])|levels):(train|heldout)(?::(\d+))?(?::(\d+))?$/.exec(spec);
  if (lv) {
    if (env !== 'toolcall') throw new EnvRequestError('levelN:… and levels:… task sets are for the toolcall environment');
    const fixed = lv[2] ? Number(lv[2]) : null;
    if (fixed !== null && fixed > MAX_LEVEL) throw new EnvRequestError(`difficulty levels are 1–${MAX_LEVEL}`);
    const count = Number(lv[4] ?? 64), start = Number(lv[5] ?? 0);
    // levels:…: every level in turn (a held-out set that spans the difficulties)
    return Array.from({ length: count }, (_, i) => makeLeveledTask(lv[3] as Split, start + i, fixed ?? 1 + (i % MAX_LEVEL)) as unknown as Task);
  }
  const m = /^(builtin|expressions|small):(train|heldout)(?::(\d+))?(?::(\d+))?$/.exec(spec);
  if (m && m[1] !== 'builtin' && env !== 'toolcall') throw new EnvRequestError(`${m[1]}:… task sets are for the toolcall environment`);
  if (m) return builtinTasks(env, m[2] as Split, Number(m[3] ?? 64), Number(m[4] ?? 0), m[1] === 'builtin' ? 'mixed' : m[1] as TaskStyle);
  if (!existsSync(spec)) throw new EnvRequestError(`task file not found: ${spec} (or use builtin:train:N / builtin:heldout:N)`);
  const tasks: Task[] = [];
  readFileSync(spec, 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let t: unknown;
    try { t = JSON.parse(line); } catch (e) { throw new EnvRequestError(`${spec}:${i + 1}: not valid JSON: ${(e as Error).message}`); }
    if (!t || typeof t !== 'object' || typeof (t as Task).key !== 'string') throw new EnvRequestError(`${spec}:${i + 1}: a task must be an object with a string 'key'`);
    if (env === 'terminal') validateTerminalTask(t as Task);
    if (env === 'gui') validateGuiTask(t as Task);
    if (env === 'swe') { withSnapshot(t as Task, dirname(resolve(spec))); validateSweTask(t as Task); }
    if (env === 'toolcall' && (typeof (t as Task).question !== 'string' || typeof (t as Task).answer !== 'number')) throw new EnvRequestError(`${spec}:${i + 1}: a tool-call task needs 'question' (string) and 'answer' (number)`);
    tasks.push(t as Task);
  });
  if (tasks.length === 0) throw new EnvRequestError(`${spec} holds no tasks`);
  return tasks;
}
