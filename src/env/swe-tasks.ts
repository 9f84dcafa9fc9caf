// A generator of small, real bug-fix tasks for the SWE environment. The raw material is a folder of
// correct snippets (Python, JavaScript and TypeScript, each with its test file; test/data/swe/snippets):
// lines marked `@mutate` take one mutation from a fixed set of bug kinds (off-by-one, wrong operator),
// lines marked `@case` may be deleted (a missing case). Each mutant becomes a task: a little repository
// holding the mutated snippet beside two untouched companions of the same language, a bug report, the
// failing test (fail-to-pass), the companions' tests (pass-to-pass), the protected test files and the
// reference fix as a patch. Markers are stripped from every file the agent sees. Pure and
// deterministic; test/env/swe.test.ts runs every mutant to show its test fails and the fix passes.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng, type Split } from './arithmetic.ts';
import { unifiedDiff } from './patch.ts';
import type { SweTask, SweTest } from './swe.ts';

export type BugKind = 'off-by-one' | 'wrong operator' | 'missing case';

/** Mutation operators on a marked line: [kind, what the line contains, what it becomes]. */
const OPERATORS: [BugKind, string, string][] = [
  ['off-by-one', ' <= ', ' < '], ['off-by-one', ' < ', ' <= '], ['off-by-one', ' >= ', ' > '], ['off-by-one', ' > ', ' >= '],
  ['off-by-one', ' + 1', ''], ['off-by-one', ' - 1', ''],
  ['wrong operator', ' + ', ' - '], ['wrong operator', ' - ', ' + '], ['wrong operator', ' * ', ' + '],
  ['wrong operator', ' && ', ' || '], ['wrong operator', ' || ', ' && '], ['wrong operator', ' and ', ' or '], ['wrong operator', ' or ', ' and '],
  ['wrong operator', ' === ', ' !== '], ['wrong operator', ' !== ', ' === '], ['wrong operator', ' == ', ' != '],
  ['wrong operator', 'max(', 'min('], ['wrong operator', 'min(', 'max('],
];

export interface Snippet {
  name: string;
  language: 'python' | 'javascript' | 'typescript';
  summary: string;
  split: Split;
  /** repository-relative path → content, markers still in */
  files: Record<string, string>;
  /** the file holding the markers */
  source: string;
  test: SweTest;
}

export interface Mutant { snippet: string; kind: BugKind; file: string; line: number; before: string; after: string }

/** The snippets that ship with the project (test/data/swe/snippets). */
export const DEFAULT_SNIPPETS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'data', 'swe', 'snippets');

const MARKER = /\s*(?:\/\/|#)\s*(@(?:mutate|case)\b.*)$/;
const languageOf = (path: string): Snippet['language'] | null =>
  path.endsWith('.py') ? 'python' : path.endsWith('.mjs') || path.endsWith('.js') ? 'javascript' : path.endsWith('.ts') ? 'typescript' : null;

function walk(dir: string, root = dir): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p, root) : [relative(root, p)];
  });
}

/** Read every snippet folder (each with snippet.json: summary, test {name, command}, optional split). */
export function loadSnippets(dir = DEFAULT_SNIPPETS_DIR): Snippet[] {
  if (!existsSync(dir)) throw new Error(`no snippets folder at ${dir}`);
  return readdirSync(dir).sort().filter((n) => existsSync(join(dir, n, 'snippet.json'))).map((name) => {
    const meta = JSON.parse(readFileSync(join(dir, name, 'snippet.json'), 'utf8')) as { summary: string; test: SweTest; split?: Split };
    const files: Record<string, string> = {};
    for (const p of walk(join(dir, name))) if (p !== 'snippet.json') files[p] = readFileSync(join(dir, name, p), 'utf8');
    const marked = Object.keys(files).filter((p) => !p.startsWith('tests/') && files[p].split('\n').some((l) => MARKER.test(l)));
    if (marked.length !== 1) throw new Error(`snippet ${name}: exactly one source file must carry @mutate/@case markers (found ${marked.length})`);
    const language = languageOf(marked[0]);
    if (!language) throw new Error(`snippet ${name}: unknown language of ${marked[0]}`);
    if (typeof meta.summary !== 'string' || typeof meta.test?.command !== 'string') throw new Error(`snippet ${name}: snippet.json needs summary and test {name, command}`);
    return { name, language, summary: meta.summary, split: meta.split ?? 'train', files, source: marked[0], test: meta.test };
  });
}

/** The text without markers (what the agent sees). */
export function stripMarkers(text: string): string {
  return text.split('\n').map((l) => l.replace(MARKER, '')).join('\n');
}

/** Every mutant of a snippet, in a fixed order. */
export function mutants(s: Snippet): Mutant[] {
  const lines = s.files[s.source].split('\n');
  const out: Mutant[] = [];
  lines.forEach((raw, i) => {
    const m = MARKER.exec(raw);
    if (!m) return;
    const line = raw.replace(MARKER, '');
    const tags = m[1].split(/\s+/);
    if (tags.includes('@mutate')) {
      for (const [kind, from, to] of OPERATORS) {
        for (let at = line.indexOf(from); at >= 0; at = line.indexOf(from, at + 1)) {
          // ' < ' inside ' <= ' is not a separate site; neither is ' + 1' counted twice as ' + '
          const after = line.slice(0, at) + to + line.slice(at + from.length);
          if (!out.some((o) => o.line === i + 1 && o.after === after)) out.push({ snippet: s.name, kind, file: s.source, line: i + 1, before: line, after });
        }
      }
    }
    if (tags.includes('@case')) out.push({ snippet: s.name, kind: 'missing case', file: s.source, line: i + 1, before: line, after: '' });
  });
  return out;
}

/** The source file with the mutant applied (markers stripped). */
function mutate(s: Snippet, m: Mutant): string {
  const lines = stripMarkers(s.files[s.source]).split('\n');
  if (m.kind === 'missing case') lines.splice(m.line - 1, 1);
  else lines[m.line - 1] = m.after;
  return lines.join('\n');
}

const DIFFICULTY: Record<BugKind, number> = { 'missing case': 3, 'wrong operator': 2, 'off-by-one': 1 };

/** A task from one mutant, with `companions` snippets of the same language as the rest of the repository. */
export function taskFromMutant(key: string, s: Snippet, m: Mutant, companions: Snippet[]): SweTask {
  const files: Record<string, string> = {};
  for (const c of [s, ...companions]) for (const [p, t] of Object.entries(c.files)) files[p] = stripMarkers(t);
  const fixed = files[s.source];
  files[s.source] = mutate(s, m);
  const tests = [s, ...companions].map((c) => c.test);
  files['run_tests.sh'] = `#!/bin/sh\n# runs every test of this repository\nstatus=0\n${tests.map((t) => `${t.command} || status=1`).join('\n')}\nexit $status\n`;
  const testFiles = Object.keys(files).filter((p) => p.startsWith('tests/'));
  return {
    key, kind: 'swe', language: s.language,
    description: `Bug report: ${s.summary}. The test \`${s.test.command}\` fails. Fix the bug in the source code; do not change the tests. ` +
      `All tests of the repository run with \`sh run_tests.sh\`.`,
    brief: `${s.summary}. Failing test: ${s.test.command}`,
    files, tests: { failToPass: [s.test], passToPass: companions.map((c) => c.test) },
    protected: ['tests/', 'run_tests.sh'], testFiles, difficulty: DIFFICULTY[m.kind],
    bug: { kind: m.kind, file: m.file, line: m.line }, fix: unifiedDiff(s.source, files[s.source], fixed),
  };
}

/**
 * `count` generated tasks of a split: snippets of the split in turn, each mutant in turn, two
 * companions of the same language chosen by seed. Train and held-out tasks come from disjoint snippets.
 */
export function makeSweTasks(split: Split, count: number, start = 0, snippets: Snippet[] = loadSnippets()): SweTask[] {
  const own = snippets.filter((s) => s.split === split);
  if (own.length === 0) throw new Error(`no ${split} snippets`);
  const all = own.flatMap((s) => mutants(s).map((m) => ({ s, m })));
  return Array.from({ length: count }, (_, i) => {
    const n = start + i;
    const { s, m } = all[n % all.length];
    const r = rng(n * 7 + 13);
    const pool = snippets.filter((c) => c.language === s.language && c.name !== s.name);
    const companions: Snippet[] = [];
    while (companions.length < Math.min(2, pool.length)) {
      const c = pool[Math.floor(r() * pool.length)];
      if (!companions.includes(c)) companions.push(c);
    }
    return taskFromMutant(`swe-${split}-${n}`, s, m, companions);
  });
}
