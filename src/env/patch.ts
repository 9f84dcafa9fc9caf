// Unified diffs, pure: the reference patch of a generated bug-fix task (one contiguous change), the
// paths a patch touches (every header form git writes: `diff --git`, ---/+++, rename/copy), and
// whether a path is one the agent may not change (tests, test runners, interpreter configuration).

/** A git-style unified diff of one file, from `before` to `after`, with `context` lines around the change. */
export function unifiedDiff(path: string, before: string, after: string, context = 3): string {
  if (before === after) return '';
  const a = splitLines(before), b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const from = Math.max(0, head - context);
  const aEnd = Math.min(a.length, a.length - tail + context), bEnd = Math.min(b.length, b.length - tail + context);
  const lines: string[] = [];
  for (let i = from; i < head; i++) lines.push(` ${a[i]}`);
  for (let i = head; i < a.length - tail; i++) lines.push(`-${a[i]}`);
  for (let i = head; i < b.length - tail; i++) lines.push(`+${b[i]}`);
  for (let i = a.length - tail; i < aEnd; i++) lines.push(` ${a[i]}`);
  const aCount = aEnd - from, bCount = bEnd - from;
  const range = (start: number, count: number) => `${count === 0 ? start : start + 1},${count}`;
  return [`diff --git a/${path} b/${path}`, `--- a/${path}`, `+++ b/${path}`, `@@ -${range(from, aCount)} +${range(from, bCount)} @@`, ...lines, ''].join('\n');
}

/** Lines of a text that ends with a newline (a missing final newline is not represented). */
function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** Unquote a path as git writes it ("a/x y" with C escapes when the name is unusual). */
function unquote(p: string): string {
  const t = p.trim();
  if (!t.startsWith('"')) return t.split('\t')[0];
  try { return JSON.parse(t.replace(/\\([0-7]{3})/g, (_, o: string) => `\\u${Number.parseInt(o, 8).toString(16).padStart(4, '0')}`)); } catch { return t.slice(1, -1); }
}

const stripSide = (p: string) => p.replace(/^[ab]\//, '');

/**
 * Every path a patch names, from all the header forms git apply reads. Over-inclusive on purpose:
 * a path named anywhere in a header counts as touched.
 */
export function patchPaths(patch: string): string[] {
  const paths = new Set<string>();
  for (const line of patch.split('\n')) {
    let m: RegExpExecArray | null;
    if ((m = /^diff --git (.+)$/.exec(line))) {
      const rest = m[1];
      const q = /^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$/.exec(rest);
      if (q) { paths.add(stripSide(unquote(q[1]))); paths.add(stripSide(unquote(q[2]))); }
      else for (const part of rest.split(' b/')) paths.add(stripSide(unquote(part)));
    } else if ((m = /^(?:---|\+\+\+) (.+)$/.exec(line))) {
      const p = unquote(m[1]);
      if (p !== '/dev/null') paths.add(stripSide(p));
    } else if ((m = /^(?:rename|copy) (?:from|to) (.+)$/.exec(line))) paths.add(unquote(m[1]));
  }
  return [...paths].map(normalisePath).filter((p) => p !== '');
}

/** A repository-relative path with `./`, duplicate slashes and trailing slashes removed. */
export function normalisePath(p: string): string {
  return p.split('/').filter((s) => s !== '' && s !== '.').join('/');
}

/** Files that change how tests run wherever they sit: runner and interpreter configuration. */
export const CONFIG_NAMES = [
  'package.json', 'package-lock.json', 'tsconfig.json', '.npmrc', 'pyproject.toml', 'setup.cfg', 'setup.py', 'tox.ini', 'pytest.ini',
  'conftest.py', 'sitecustomize.py', 'usercustomize.py', 'Makefile', '.gitattributes',
];

/**
 * Whether a path is protected: inside a protected folder (an entry ending in '/'), equal to a
 * protected file, a configuration file by name (CONFIG_NAMES, Python's *.pth start-up files), or a
 * byte-code cache (a .pyc whose recorded source size and time match can stand in for the source).
 */
export function isProtected(path: string, protectedPaths: string[]): boolean {
  const p = normalisePath(path);
  const name = p.split('/').at(-1) ?? '';
  if (CONFIG_NAMES.includes(name) || name.endsWith('.pth') || name.endsWith('.pyc') || p.split('/').includes('__pycache__') || p.startsWith('node_modules/') || p.startsWith('.git/') || p === '.git') return true;
  return protectedPaths.some((q) => (q.endsWith('/') ? `${p}/`.startsWith(normalisePath(q) + '/') : p === normalisePath(q)));
}
