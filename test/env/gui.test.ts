// The GUI environment in real headless Chromium (Debian's, through playwright-core): for each task
// page a scripted correct action sequence passes the checker and a wrong one fails; the pages have no
// network; actions by bad references fail cleanly; 8 episodes run in parallel within 1 GB of extra
// memory. Skipped, saying why, only where Chromium is missing (.ci/run installs it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { GuiEnv, SharedBrowser, browserSupport, GUI_TOOLS_COMPACT, type GuiEnvOptions } from '../../src/env/gui.ts';
import { observationBudget } from '../../src/env/budget.ts';
import { makeGuiTasks, makeGuiTask, mismatch, findRef, findRefOrThrow, checkState, type GuiTask, type GuiStep } from '../../src/env/gui-tasks.ts';
import { loadTasks } from '../../src/env/tasks.ts';
import { treeMemory } from '../../src/bench/process-memory.ts';

const support = await browserSupport();
const skip = support.ok ? false : support.reason;
const browser = new SharedBrowser(500);
after(() => browser.close());

/**
 * Play scripted steps: each resolved to its element reference in the latest observation that names it
 * (the compact form sends only what changed, so a reference may sit in an earlier one).
 */
async function play(env: GuiEnv, first: string, steps: GuiStep[], seen: string[] = []): Promise<string> {
  const texts = [first];
  for (const s of steps) {
    const ref = texts.toReversed().map((t) => findRef(t, s.role, s.name)).find(Boolean) ?? findRefOrThrow(texts.at(-1)!, s.role, s.name);
    const obs = await env.execTool({ name: s.action, arguments: { ref, ...(s.text !== undefined ? { text: s.text } : {}), ...(s.option !== undefined ? { option: s.option } : {}) } });
    assert.equal(obs.error, false, `${s.action} ${s.name}: ${obs.content.slice(0, 200)}`);
    texts.push(obs.content);
    seen.push(obs.content);
  }
  return texts.at(-1)!;
}

/** Another option of the same drop-down. */
const OTHER_OPTION: Record<string, string> = { French: 'German', German: 'Spanish', Spanish: 'French', Small: 'Large', Medium: 'Small', Large: 'Medium', Free: 'Pro', Pro: 'Team', Team: 'Free' };

async function episode(task: GuiTask, steps: (first: string) => GuiStep[], screenshots = 'off', o: Partial<GuiEnvOptions> = {}) {
  const env = new GuiEnv(browser, { actionTimeoutMs: 20_000, screenshots, ...o });
  try {
    const r = await env.reset(task);
    const page = `${r.system}\n${r.user}`;
    const observations: string[] = [];
    await play(env, page, steps(page), observations);
    await env.execTool({ name: 'done', arguments: {} });
    return { evaluation: await env.evaluate({ finalMessage: '', toolCalls: 0 }), state: await env.state(), screenshots: [...env.screenshots], reset: r, compact: env.compactForm, observations };
  } finally { await env.close(); }
}

/** One task of every kind (the list page has three), train and held-out wordings mixed. */
function oneOfEachKind(): GuiTask[] {
  const byKind = new Map<string, GuiTask>();
  for (const t of [...makeGuiTasks('heldout', 10), ...makeGuiTasks('train', 40)]) {
    const kind = `${t.page.split('?')[0]}:${t.solution!.at(-1)!.name.split(' ')[0]}`;
    if (!byKind.has(kind)) byKind.set(kind, t);
  }
  return [...byKind.values()];
}

test('checkers match the expected page state as a subset; references are found by role and name', () => {
  const table: [unknown, unknown, string | null][] = [
    [{ a: 1 }, { a: 1, b: 2 }, null], [{ a: 1 }, { a: 2 }, 'taskState.a: expected 1, got 2'], [{ a: [1, 2] }, { a: [1] }, 'taskState.a: expected 2 items, got 1'],
    [{ s: { x: true } }, { s: null }, 'taskState.s: expected an object, got null'], [{ l: [{ t: 'a' }] }, { l: [{ t: 'a', d: false }] }, null],
  ];
  for (const [e, a, want] of table) assert.equal(mismatch(e, a), want);
  const tree = '- main [ref=e2]:\n  - textbox "Full name" [ref=e6]\n  - button "Sign up" [ref=e13] [cursor=pointer]\n  - button "Sign" [ref=e14]';
  assert.equal(findRef(tree, 'textbox', 'Full name'), 'e6');
  assert.equal(findRef(tree, 'button', 'Sign'), 'e14');
  assert.equal(findRef(tree, 'button', 'Log in'), null);
  assert.deepEqual(makeGuiTask('train', 4), makeGuiTask('train', 4));
  const train = makeGuiTasks('train', 80), held = makeGuiTasks('heldout', 40);
  const frame = (t: GuiTask) => t.goal.replace(/[A-Z][a-z]+ [A-Z][a-z]+|\b[A-Z][a-z]+\b|\S+@\S+|\b\d+\b|\b[a-z]+s?\b(?= (to|from|on|off|as))/g, '#');
  const trainGoals = new Set(train.map(frame));
  assert.ok(held.every((t) => !trainGoals.has(frame(t))), 'held-out goals use their own wordings');
  assert.deepEqual(new Set(train.map((t) => t.page.split('?')[0])), new Set(['signup.html', 'todo.html', 'settings.html', 'orders.html']));
  assert.equal(checkState(train[0], null).ok, false);
  assert.equal(loadTasks('gui', 'builtin:heldout:5').length, 5);
});

test('every task page: the scripted correct sequence passes the checker, a wrong one fails', { skip, timeout: 300_000 }, async () => {
  // one task of every kind (the list page has three), train and held-out wordings mixed
  const all = [...makeGuiTasks('heldout', 10), ...makeGuiTasks('train', 40)];
  const byKind = new Map<string, GuiTask[]>();
  for (const t of all) {
    const kind = `${t.page.split('?')[0]}:${t.solution!.at(-1)!.name.split(' ')[0]}`;
    if (!byKind.has(kind)) byKind.set(kind, [t]);
  }
  assert.equal(byKind.size, 6);
  const pages = new Set([...byKind.keys()].map((k) => k.split(':')[0]));
  assert.deepEqual(pages, new Set(['signup.html', 'todo.html', 'settings.html', 'orders.html']));
  for (const task of [...byKind.values()].flat()) {
    const good = await episode(task, () => task.solution!, 'temp');
    assert.equal(good.evaluation.score, 1, `${task.key} (${task.goal}): ${good.evaluation.detail}`);
    assert.match(good.reset.user, /\[ref=\w+\]/);
    assert.match(good.reset.user, /\[screenshot: .*\.png\]/);
    // wrong: the last step left out (no submit, no save, no click on the right row)
    const short = await episode(task, () => task.solution!.slice(0, -1));
    assert.equal(short.evaluation.score, -1, `${task.key} without its last step passed`);
    // wrong: a different value or a different row
    const wrong = await episode(task, (tree) => task.solution!.map((s, i) => {
      if (i !== 0) return s;
      if (s.text !== undefined) return { ...s, text: `${s.text}x` };
      if (s.option !== undefined) return { ...s, option: OTHER_OPTION[s.option] };
      // a list or table click: the same kind of element, on another row
      const other = [...tree.matchAll(new RegExp(`- ${s.role} "(${s.name.split(' ').slice(0, -1).join(' ')} [^"]+)"`, 'g'))].map((m) => m[1]).find((n) => n !== s.name)!;
      return { ...s, name: other };
    }));
    assert.equal(wrong.evaluation.score, -1, `${task.key}: a wrong sequence passed (${JSON.stringify(wrong.state)})`);
  }
});

test('a 512-token model: the compact form within its budget, and every scripted sequence still passes', { skip, timeout: 300_000 }, async () => {
  // token count: about 1.5 characters a token, the rate of stories260K's 512-token vocabulary on these pages
  const countTokens = (s: string) => Math.ceil(s.length / 1.5);
  const budget = observationBudget(512);
  for (const task of oneOfEachKind()) {
    const good = await episode(task, () => task.solution!, 'off', { observationTokens: budget, countTokens });
    assert.equal(good.compact, true, `${task.key}: the full tree fits ${budget} tokens?`);
    assert.equal(good.evaluation.score, 1, `${task.key} (${task.goal}): ${good.evaluation.detail}`);
    assert.equal(good.reset.user, task.goal);
    assert.deepEqual(good.reset.tools, GUI_TOOLS_COMPACT);
    assert.doesNotMatch(good.reset.system, /\[ref=|screenshot/);
    assert.ok(countTokens(good.reset.system) <= budget, `${task.key}: page of ${countTokens(good.reset.system)} tokens`);
    for (const o of good.observations) assert.ok(countTokens(o) <= budget, `${task.key}: observation of ${countTokens(o)} tokens`);
    // after the first action only what changed comes back (a text box's new value, not the page)
    if (task.solution![0].action === 'type') assert.equal(good.observations[0].split('\n').length, 1, good.observations[0]);
    const short = await episode(task, () => task.solution!.slice(0, -1), 'off', { observationTokens: budget, countTokens });
    assert.equal(short.evaluation.score, -1, `${task.key} without its last step passed`);
  }
  // a large model's budget: the full form, as before
  const large = await episode(makeGuiTask('train', 0), () => [], 'off', { observationTokens: observationBudget(32_768), countTokens });
  assert.equal(large.compact, false);
  assert.match(large.reset.user, /\[ref=\w+\]/);
});

test('pages have no network; bad actions fail cleanly as observations; the 15th step ends the episode', { skip, timeout: 120_000 }, async () => {
  const env = new GuiEnv(browser, { screenshots: 'off' });
  try {
    const r = await env.reset(makeGuiTask('train', 0));
    assert.doesNotMatch(r.user, /screenshot/);
    const page = (env as unknown as { page: { evaluate: (s: string) => Promise<unknown> } }).page;
    const fetched = await page.evaluate(`fetch('http://example.com/').then(() => 'reached', (e) => 'blocked: ' + e.message)`);
    assert.match(String(fetched), /^blocked/);
    const bad = await env.execTool({ name: 'click', arguments: { ref: 'e999' } });
    assert.equal(bad.error, true);
    assert.match(bad.content, /^Error: no element \[ref=e999\] on the page/);
    assert.match((await env.execTool({ name: 'hover', arguments: { ref: 'e2' } })).content, /unknown action 'hover'/);
    assert.match((await env.execTool({ name: 'type', arguments: { text: 'x' } })).content, /needs \{"ref"/);
    assert.equal((await env.execTool({ name: 'scroll', arguments: { direction: 'down' } })).error, false);
    const dones: boolean[] = [];
    for (let i = 5; i <= 15; i++) dones.push((await env.execTool({ name: 'scroll', arguments: { direction: 'up' } })).done);
    assert.deepEqual(dones, [...Array(10).fill(false), true]);
  } finally { await env.close(); }
});

test('8 episodes in parallel, one browser context each, all pass, within 1 GB of extra memory', { skip, timeout: 300_000 }, async (t) => {
  const own = new SharedBrowser(100);
  const before = treeMemory();
  const tasks = makeGuiTasks('train', 8, 100);
  let peak = 0;
  const envs = tasks.map(() => new GuiEnv(own, { screenshots: 'off', actionTimeoutMs: 30_000 }));
  try {
    const firsts = await Promise.all(envs.map((e, i) => e.reset(tasks[i])));
    peak = Math.max(peak, treeMemory().pssBytes);
    const results = await Promise.all(envs.map(async (e, i) => {
      await play(e, firsts[i].user, tasks[i].solution!);
      return e.evaluate({ finalMessage: '', toolCalls: 0 });
    }));
    const m = treeMemory();
    peak = Math.max(peak, m.pssBytes);
    assert.ok(results.every((r) => r.success), JSON.stringify(results));
    assert.ok(m.processes >= 8, `one browser process tree with a renderer per context (${m.processes} processes)`);
  } finally {
    await Promise.all(envs.map((e) => e.close()));
    await own.close();
  }
  const extra = peak - before.pssBytes;
  t.diagnostic(`8 parallel GUI episodes: ${(extra / 2 ** 20).toFixed(0)} MiB extra (PSS of the browser's process tree)`);
  assert.ok(extra < 2 ** 30, `8 parallel episodes took ${(extra / 2 ** 20).toFixed(0)} MiB`);
});

test('the browser is found where .ci/run puts it', { skip: !existsSync('/usr/bin/chromium') && 'no /usr/bin/chromium' }, async () => {
  assert.deepEqual(await browserSupport(), { ok: true });
});
