// The SWE environment: patches (pure), the bug-fix task generator, and the acceptance — for 10
// generated tasks a scripted correct patch scores +1, an empty patch −1 and a patch that edits the
// tests −1 — plus the fresh-sandbox evaluation that cannot see what the agent left in its own sandbox.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unifiedDiff, patchPaths, isProtected } from '../../src/env/patch.ts';
import { loadSnippets, mutants, makeSweTasks, stripMarkers } from '../../src/env/swe-tasks.ts';
import { SweEnv, evaluatePatch, isSubmit, validateSweTask, type SweTask } from '../../src/env/swe.ts';
import { loadTasks } from '../../src/env/tasks.ts';
import { sandboxSupport } from '../../src/env/sandbox.ts';

const noSandbox = sandboxSupport().ok ? false : (sandboxSupport() as { reason: string }).reason;

/** Run `f` over `items`, `n` at a time. */
async function pool<T, R>(items: T[], n: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => { for (let i = next++; i < items.length; i = next++) out[i] = await f(items[i]); }));
  return out;
}

/** A here-document that writes `content` to `path` (what a scripted agent types). */
const writeCommand = (path: string, content: string) => `cat > ${path} <<'OPENCLAW_EOF'\n${content}${content.endsWith('\n') ? '' : '\n'}OPENCLAW_EOF`;

/** The fixed content of the buggy file: the reference patch's '-' lines replaced by its '+' lines. */
function fixedSource(task: SweTask): { path: string; content: string } {
  const path = task.bug!.file;
  const lines = task.files[path].split('\n');
  const hunk = /@@ -(\d+),\d+ /.exec(task.fix!)!;
  const body = task.fix!.split('\n').filter((l) => /^[ +-]/.test(l) && !l.startsWith('---') && !l.startsWith('+++'));
  const start = Number(hunk[1]) - 1;
  const oldLen = body.filter((l) => !l.startsWith('+')).length;
  const repl = body.filter((l) => !l.startsWith('-')).map((l) => l.slice(1));
  lines.splice(start, oldLen, ...repl);
  return { path, content: lines.join('\n') };
}

test('unified diffs: one changed region with context, deletions and additions, nothing for equal texts', () => {
  assert.equal(unifiedDiff('a.py', 'x\n', 'x\n'), '');
  assert.equal(unifiedDiff('a.py', '1\n2\n3\n4\n5\n6\n7\n8\n', '1\n2\n3\n4\nfive\n6\n7\n8\n'),
    'diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n');
  assert.equal(unifiedDiff('b.js', 'a\nb\nc\n', 'a\nc\n'), 'diff --git a/b.js b/b.js\n--- a/b.js\n+++ b/b.js\n@@ -1,3 +1,2 @@\n a\n-b\n c\n');
});

test('the paths a patch touches come from every header form, and protection covers tests, runners and configuration', () => {
  const patch = [
    'diff --git a/lib/x.py b/lib/x.py', '--- a/lib/x.py', '+++ b/lib/x.py', '@@ -1 +1 @@', '-a', '+b',
    'diff --git a/old.txt b/tests/new.txt', 'similarity index 90%', 'rename from old.txt', 'rename to tests/new.txt',
    'diff --git "a/we ird.py" "b/we ird.py"', 'new file mode 100644', '--- /dev/null', '+++ "b/we ird.py"',
  ].join('\n');
  assert.deepEqual(patchPaths(patch).sort(), ['lib/x.py', 'old.txt', 'tests/new.txt', 'we ird.py']);
  const table: [string, boolean][] = [
    ['tests/test_x.py', true], ['./tests//a.py', true], ['tests', true], ['run_tests.sh', true], ['lib/x.py', false], ['testsuite/x.py', false],
    ['package.json', true], ['sub/conftest.py', true], ['sitecustomize.py', true], ['lib/evil.pth', true], ['.git/config', true], ['node_modules/x/index.js', true], ['lib/__pycache__/x.cpython-311.pyc', true],
  ];
  for (const [p, want] of table) assert.equal(isProtected(p, ['tests/', 'run_tests.sh']), want, p);
  assert.equal(isSubmit('submit'), true);
  assert.equal(isSubmit('echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'), true);
  assert.equal(isSubmit('submit && rm -rf /'), false);
});

test('the generator: deterministic tasks, markers stripped, every bug kind, train and held-out from disjoint snippets', () => {
  const snippets = loadSnippets();
  assert.ok(snippets.length >= 12);
  assert.deepEqual(new Set(snippets.map((s) => s.language)), new Set(['python', 'javascript', 'typescript']));
  assert.deepEqual(makeSweTasks('train', 5), makeSweTasks('train', 5));
  const train = makeSweTasks('train', 40), held = makeSweTasks('heldout', 8);
  for (const t of [...train, ...held]) {
    validateSweTask(t);
    for (const [p, c] of Object.entries(t.files)) assert.ok(!/@mutate|@case/.test(c), `${t.key} ${p} still has markers`);
    assert.ok(t.description.includes(t.tests.failToPass[0].command));
    assert.equal(t.tests.passToPass.length, 2);
    assert.ok(Object.keys(t.files).includes(t.bug!.file) && patchPaths(t.fix!).every((p) => !isProtected(p, t.protected)));
  }
  assert.deepEqual(new Set(train.map((t) => t.bug!.kind)), new Set(['off-by-one', 'wrong operator', 'missing case']));
  const trainBugs = new Set(train.map((t) => t.bug!.file)), heldBugs = new Set(held.map((t) => t.bug!.file));
  assert.ok([...heldBugs].every((f) => !trainBugs.has(f)));
  assert.equal(stripMarkers('x = 1  # @mutate\ny = 2 // @case @mutate\n'), 'x = 1\ny = 2\n');
  assert.equal(loadTasks('swe', 'builtin:heldout:3').length, 3);
});

test('every generated bug is real: its failing test fails on the buggy repository, and every test passes with the reference fix', { skip: noSandbox }, async () => {
  const snippets = loadSnippets();
  const tasks = (['train', 'heldout'] as const).flatMap((split) =>
    makeSweTasks(split, snippets.filter((s) => s.split === split).reduce((a, s) => a + mutants(s).length, 0), 0, snippets));
  assert.equal(tasks.length, snippets.reduce((a, s) => a + mutants(s).length, 0));
  // the fix is the same file for every mutant of a snippet: checked with the first mutant of each
  const fixChecked = new Set<string>();
  const bad = (await pool(tasks, 4, async (t) => {
    const buggy = await evaluatePatch(t, '');
    const first = !fixChecked.has(t.bug!.file);
    fixChecked.add(t.bug!.file);
    const fixed = first ? await evaluatePatch(t, t.fix!) : null;
    const ok = !buggy.tests[0].passed && buggy.tests.slice(1).every((x) => x.passed) && (fixed?.success ?? true);
    return ok ? null : `${t.key} (${t.bug!.file}:${t.bug!.line} ${t.bug!.kind}): buggy ${buggy.detail}; fixed ${fixed?.detail}`;
  })).filter(Boolean);
  assert.equal(fixChecked.size, snippets.length);
  assert.deepEqual(bad, []);
});

test('acceptance: for 10 generated tasks a scripted correct patch gets +1, an empty patch −1, a patch that edits the tests −1', { skip: noSandbox }, async () => {
  const tasks = [...makeSweTasks('train', 7, 3), ...makeSweTasks('heldout', 3)];
  const results = await pool(tasks, 3, async (task) => {
    const run = async (commands: string[]) => {
      const env = new SweEnv();
      try {
        const r = await env.reset(task);
        assert.deepEqual(r.tools.map((t) => t.function.name), ['bash']);
        assert.equal(r.maxToolCalls, 30);
        for (const c of commands) await env.execTool({ name: 'bash', arguments: { command: c } });
        const submitted = await env.execTool({ name: 'bash', arguments: { command: 'submit' } });
        assert.equal(submitted.done, true);
        return await env.evaluate({ finalMessage: '', toolCalls: commands.length + 1 });
      } finally { await env.close(); }
    };
    const fix = fixedSource(task);
    const testFile = task.testFiles!.find((p) => p.includes(task.tests.failToPass[0].command.split(' ').at(-1)!.split('/').at(-1)!))!;
    // the scripted agent looks around, runs the failing test, writes the fix, runs the tests again
    const correct = await run(['ls -R', `cat ${task.bug!.file}`, task.tests.failToPass[0].command, writeCommand(fix.path, fix.content), 'sh run_tests.sh']);
    const empty = await run(['ls']);
    // a test-editing "fix": the failing test is emptied, so the tests pass in the agent's sandbox
    const testEdit = await run([writeCommand(testFile, task.language === 'python' ? 'print("ok")\n' : "console.log('ok');\n"), task.tests.failToPass[0].command]);
    // the correct fix, but the test is edited as well: still unresolved
    const both = await run([writeCommand(fix.path, fix.content), `echo '# extra' >> ${testFile}`]);
    return { key: task.key, correct, empty, testEdit, both };
  });
  for (const r of results) {
    assert.equal(r.correct.score, 1, `${r.key} correct: ${r.correct.detail}`);
    assert.equal(r.empty.score, -1, `${r.key} empty: ${r.empty.detail}`);
    assert.match(r.empty.detail!, /empty patch/);
    assert.equal(r.testEdit.score, -1, `${r.key} test edit: ${r.testEdit.detail}`);
    assert.match(r.testEdit.detail!, /protected files: tests\//);
    assert.equal(r.both.score, -1, `${r.key} fix + test edit: ${r.both.detail}`);
  }
});

test('the evaluation runs in a fresh sandbox: a fix the agent hides from git, and files it leaves in /tmp, do not count', { skip: noSandbox }, async () => {
  const [task] = makeSweTasks('train', 1, 5);
  const fix = fixedSource(task);
  const env = new SweEnv();
  try {
    await env.reset(task);
    // the agent fixes the file but tells git to ignore the change, and plants state outside the tree
    await env.execTool({ name: 'bash', arguments: { command: writeCommand(fix.path, fix.content) } });
    await env.execTool({ name: 'bash', arguments: { command: `git update-index --skip-worktree ${fix.path} && echo fixed > /tmp/state && touch /work/.fixed` } });
    const inAgentSandbox = await env.execTool({ name: 'bash', arguments: { command: task.tests.failToPass[0].command } });
    assert.match(inAgentSandbox.content, /\[exit code 0\]/, 'the tests pass in the agent sandbox');
    const e = await env.evaluate({ finalMessage: '', toolCalls: 3 });
    assert.equal(e.score, -1, e.detail);
    assert.match(env.lastPatch!, /\.fixed/);
    assert.doesNotMatch(env.lastPatch!, new RegExp(fix.path.replace('.', '\\.')));
    assert.doesNotMatch(env.lastPatch!, /__pycache__|\.pyc/);
    // the same patch judged again in yet another fresh sandbox: same verdict, and the agent's sandbox is untouched
    assert.equal((await evaluatePatch(task, env.lastPatch!)).score, -1);
    assert.match((await env.execTool({ name: 'bash', arguments: { command: 'cat /tmp/state' } })).content, /^fixed/);
  } finally { await env.close(); }
  // an agent that commits its fix still submits it (the diff is against the base commit)
  const committer = new SweEnv();
  try {
    await committer.reset(task);
    await committer.execTool({ name: 'bash', arguments: { command: writeCommand(fix.path, fix.content) } });
    await committer.execTool({ name: 'bash', arguments: { command: 'git -c user.name=a -c user.email=a@b commit -qam fix && git log --oneline | wc -l' } });
    assert.equal((await committer.evaluate({ finalMessage: '', toolCalls: 2 })).score, 1);
  } finally { await committer.close(); }
});

test('commands are limited: a hanging command is killed and the episode goes on; the 30th call ends the episode', { skip: noSandbox }, async () => {
  const [task] = makeSweTasks('train', 1);
  const env = new SweEnv({ sandbox: { wallMs: 1500 } });
  try {
    await env.reset(task);
    const hang = await env.execTool({ name: 'bash', arguments: { command: 'sleep 60' } });
    assert.equal(hang.error, true);
    assert.match(hang.content, /wall-clock limit/);
    assert.match((await env.execTool({ name: 'python', arguments: {} })).content, /only tool is bash/);
    const dones: boolean[] = [];
    for (let i = 2; i < 30; i++) dones.push((await env.execTool({ name: 'bash', arguments: { command: 'true' } })).done);
    assert.deepEqual(dones, [...Array(27).fill(false), true]);
  } finally { await env.close(); }
});

test('SWE task files: inline files or a repository snapshot folder, with clear errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openclaw-rl-swe-tasks-'));
  mkdirSync(join(dir, 'repo', 'tests'), { recursive: true });
  writeFileSync(join(dir, 'repo', 'm.py'), 'x = 1\n');
  writeFileSync(join(dir, 'repo', 'tests', 't.py'), 'import m\n');
  const tests = { failToPass: [{ name: 't', command: 'python3 tests/t.py' }], passToPass: [] };
  writeFileSync(join(dir, 'tasks.jsonl'), `${JSON.stringify({ key: 'snap', description: 'fix it', snapshot: 'repo', tests, protected: ['tests/'] })}\n`);
  const [t] = loadTasks('swe', join(dir, 'tasks.jsonl'));
  assert.deepEqual(Object.keys(t.files as object).sort(), ['m.py', 'tests/t.py']);
  writeFileSync(join(dir, 'bad.jsonl'), `${JSON.stringify({ key: 'b', description: 'x', files: { 'a.py': '' }, tests: { failToPass: [] }, protected: [] })}\n`);
  assert.throws(() => loadTasks('swe', join(dir, 'bad.jsonl')), /failToPass/);
  writeFileSync(join(dir, 'bad.jsonl'), `${JSON.stringify({ key: 'b', description: 'x', snapshot: 'nope', tests, protected: [] })}\n`);
  assert.throws(() => loadTasks('swe', join(dir, 'bad.jsonl')), /snapshot folder not found/);
});

test('a 512-token model: a compact opening (short system prompt, the brief, the tool undescribed) and outputs cut to its budget', { skip: noSandbox }, async () => {
  // token count: about 1.5 characters a token, the rate of stories260K's 512-token vocabulary on code
  const countTokens = (s: string) => Math.ceil(s.length / 1.5);
  const [task] = makeSweTasks('train', 1);
  const small = new SweEnv({ contextTokens: 512, countTokens });
  const large = new SweEnv({ contextTokens: 32_768, countTokens });
  try {
    const r = await small.reset(task);
    assert.equal(r.user, task.brief);
    assert.ok(task.brief!.includes(task.tests.failToPass[0].command));
    assert.equal(r.tools[0].function.description, undefined);
    assert.ok(countTokens(`${r.system}\n${r.user}`) <= 256, `${r.system}\n${r.user}`);
    const o = await small.execTool({ name: 'bash', arguments: { command: 'seq 1 2000; exit 3' } });
    assert.ok(countTokens(o.content) <= 192, `${countTokens(o.content)} tokens`);
    assert.match(o.content, /^1\n2\n[\s\S]*… \(cut\)\n\[exit code 3\]$/);
    const full = await large.reset(task);
    assert.equal(full.user, task.description);
    assert.ok(full.tools[0].function.description);
  } finally { await small.close(); await large.close(); }
});
