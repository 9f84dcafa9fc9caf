// Tasks of the GUI environment and their checkers, pure. A task names a local page (with its start
// state in the query string), a goal in words, and `expect`: what the page's `window.taskState` must
// hold at the end (matched as a subset: every key given must match; arrays must match item by item).
// Generated over four pages (test/data/gui/pages): a sign-up form, a shopping list, a settings page
// and an orders table; train and held-out tasks use disjoint goal wordings and values. Each task also
// carries a scripted correct action sequence (by role and accessible name, resolved to element
// references at run time), used by the tests and as a reference.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng, type Split } from './arithmetic.ts';
import { EnvRequestError, type Task } from './types.ts';

export const DEFAULT_PAGES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'data', 'gui', 'pages');

/** One scripted step: an action on the element with this role and accessible name. */
export interface GuiStep { action: 'click' | 'type' | 'select'; role: string; name: string; text?: string; option?: string }

export interface GuiTask extends Task {
  kind?: 'gui';
  /** the page and its start state, relative to the pages folder: 'todo.html?items=milk,eggs' */
  page: string;
  goal: string;
  /** the subset of window.taskState that must hold at the end */
  expect: Record<string, unknown>;
  difficulty?: number;
  solution?: GuiStep[];
}

export function validateGuiTask(t: Task): GuiTask {
  const bad = (m: string) => new EnvRequestError(`gui task ${t.key}: ${m}`);
  if (typeof t.page !== 'string' || !/^[\w-]+\.html(\?.*)?$/.test(t.page)) throw bad(`'page' must be a page file name like form.html (with an optional ?query)`);
  if (typeof t.goal !== 'string' || !t.goal) throw bad(`needs a 'goal'`);
  if (!t.expect || typeof t.expect !== 'object' || Array.isArray(t.expect)) throw bad(`'expect' must be an object (the expected window.taskState, as a subset)`);
  return t as GuiTask;
}

/** Subset match: where `expected` and `actual` differ, as a path and the two values; null when they match. */
export function mismatch(expected: unknown, actual: unknown, path = 'taskState'): string | null {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected a list, got ${JSON.stringify(actual)}`;
    if (actual.length !== expected.length) return `${path}: expected ${expected.length} items, got ${actual.length}`;
    for (let i = 0; i < expected.length; i++) { const m = mismatch(expected[i], actual[i], `${path}[${i}]`); if (m) return m; }
    return null;
  }
  if (expected && typeof expected === 'object') {
    if (!actual || typeof actual !== 'object' || Array.isArray(actual)) return `${path}: expected an object, got ${JSON.stringify(actual)}`;
    for (const [k, v] of Object.entries(expected)) { const m = mismatch(v, (actual as Record<string, unknown>)[k], `${path}.${k}`); if (m) return m; }
    return null;
  }
  return Object.is(expected, actual) ? null : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

/** The checker: does the page's state satisfy the task? */
export function checkState(task: GuiTask, state: unknown): { ok: boolean; detail: string } {
  const m = mismatch(task.expect, state);
  return m ? { ok: false, detail: `not done: ${m}` } : { ok: true, detail: 'the page state matches the goal' };
}

/**
 * The reference of the element with this role and exact accessible name, or null: in an aria snapshot
 * (`- button "Sign up" [ref=e13]`) or in the compact form (`e13 button "Sign up"`, also after `+ `).
 */
export function findRef(tree: string, role: string, name: string): string | null {
  for (const line of tree.split('\n')) {
    const full = /^\s*- (\w+) "((?:[^"\\]|\\.)*)".*\[ref=(\w+)\]/.exec(line);
    if (full && full[1] === role && full[2] === name) return full[3];
    const compact = /^(?:\+ )?(e\d+) (\w+) "((?:[^"\\]|\\.)*)"/.exec(line);
    if (compact && compact[2] === role && compact[3] === name) return compact[1];
  }
  return null;
}

/** findRef, or a clear error naming what was looked for. */
export function findRefOrThrow(tree: string, role: string, name: string): string {
  const ref = findRef(tree, role, name);
  if (!ref) throw new Error(`no ${role} "${name}" in the accessibility tree:\n${tree.slice(0, 1500)}`);
  return ref;
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

const PEOPLE: Record<Split, string[]> = {
  train: ['Ada Lovelace', 'Alan Turing', 'Grace Hopper', 'Katherine Johnson', 'Linus Pauling', 'Marie Curie', 'Niels Bohr', 'Rosalind Franklin'],
  heldout: ['Emmy Noether', 'Claude Shannon', 'Barbara Liskov', 'Edsger Dijkstra'],
};
const PLANS = [['free', 'Free'], ['pro', 'Pro'], ['team', 'Team']] as const;
const GROCERIES: Record<Split, string[]> = {
  train: ['milk', 'eggs', 'bread', 'apples', 'rice', 'butter', 'tea', 'cheese', 'lemons', 'flour'],
  heldout: ['honey', 'olives', 'pasta', 'yogurt', 'carrots'],
};
const LANGUAGES = [['en', 'English'], ['fr', 'French'], ['de', 'German'], ['es', 'Spanish']] as const;
const SIZES = [['small', 'Small'], ['medium', 'Medium'], ['large', 'Large']] as const;
const CUSTOMERS: Record<Split, string[]> = { train: ['Mia', 'Tom', 'Lily', 'Sam', 'Ben', 'Anna'], heldout: ['Zoe', 'Max', 'Ivy', 'Leo'] };
const GOODS = ['lamp', 'desk', 'chair', 'kettle', 'mirror', 'rug'];

const WORDING: Record<Split, Record<string, string>> = {
  train: {
    signup: 'Sign up as {name} with the email {email}, on the {plan} plan, {news} the newsletter.',
    add: 'Add {item} to the shopping list.', remove: 'Remove {item} from the shopping list.', bought: 'Mark {item} as bought.',
    settings: 'Set the language to {language} and the text size to {size}, turn dark mode {dark}, then save.',
    ship: 'Ship the order of {customer}.',
  },
  heldout: {
    signup: 'Create an account for {name} ({email}) with the {plan} plan; {news} the newsletter.',
    add: 'Put {item} on the list.', remove: 'Take {item} off the list.', bought: 'Check off {item}: it is bought.',
    settings: 'Change the settings: {language} language, {size} text, dark mode {dark}. Save them.',
    ship: 'Find the order placed by {customer} and mark it shipped.',
  },
};

const fill = (template: string, values: Record<string, string>) => template.replace(/\{(\w+)\}/g, (_, k: string) => values[k]);

/** One generated task (kind by seed), deterministic. */
export function makeGuiTask(split: Split, seed: number): GuiTask {
  const r = rng(seed * 2 + (split === 'heldout' ? 1 : 0) + 104_729);
  const w = WORDING[split];
  const key = `gui-${split}-${seed}`;
  const kind = pick(r, ['signup', 'list', 'settings', 'ship'] as const);
  if (kind === 'signup') {
    const name = pick(r, PEOPLE[split]);
    const email = `${name.split(' ')[0].toLowerCase()}@example.org`;
    const [plan, planLabel] = pick(r, PLANS);
    const newsletter = r() < 0.5;
    const solution: GuiStep[] = [
      { action: 'type', role: 'textbox', name: 'Full name', text: name }, { action: 'type', role: 'textbox', name: 'Email', text: email },
      { action: 'select', role: 'combobox', name: 'Plan', option: planLabel },
      ...(newsletter ? [{ action: 'click' as const, role: 'checkbox', name: 'Send me the newsletter' }] : []),
      { action: 'click', role: 'button', name: 'Sign up' },
    ];
    return { key, kind: 'gui', page: 'signup.html', goal: fill(w.signup, { name, email, plan: planLabel, news: newsletter ? 'subscribing to' : 'without' }),
      expect: { submitted: { name, email, plan, newsletter } }, difficulty: 3, solution };
  }
  if (kind === 'list') {
    const pool = [...GROCERIES[split]];
    const items: string[] = [];
    for (let n = 2 + Math.floor(r() * 3); items.length < n;) { const g = pick(r, pool); if (!items.includes(g)) items.push(g); }
    const op = pick(r, ['add', 'remove', 'bought'] as const);
    const start = items.map((text) => ({ text, done: false }));
    const page = `todo.html?items=${items.join(',')}`;
    if (op === 'add') {
      const item = pool.find((g) => !items.includes(g))!;
      return { key, kind: 'gui', page, goal: fill(w.add, { item }), expect: { items: [...start, { text: item, done: false }] }, difficulty: 2,
        solution: [{ action: 'type', role: 'textbox', name: 'New item', text: item }, { action: 'click', role: 'button', name: 'Add' }] };
    }
    const item = pick(r, items);
    if (op === 'remove') {
      return { key, kind: 'gui', page, goal: fill(w.remove, { item }), expect: { items: start.filter((s) => s.text !== item) }, difficulty: 1,
        solution: [{ action: 'click', role: 'button', name: `Remove ${item}` }] };
    }
    return { key, kind: 'gui', page, goal: fill(w.bought, { item }), expect: { items: start.map((s) => ({ ...s, done: s.text === item })) }, difficulty: 1,
      solution: [{ action: 'click', role: 'checkbox', name: `Bought ${item}` }] };
  }
  if (kind === 'settings') {
    const [language, languageLabel] = pick(r, LANGUAGES.slice(1));
    const [size, sizeLabel] = pick(r, SIZES);
    const dark = r() < 0.5;
    return {
      key, kind: 'gui', page: 'settings.html', goal: fill(w.settings, { language: languageLabel, size: sizeLabel, dark: dark ? 'on' : 'off' }),
      expect: { saved: { language, size, dark, notifications: true } }, difficulty: 2,
      solution: [
        { action: 'select', role: 'combobox', name: 'Language', option: languageLabel }, { action: 'select', role: 'combobox', name: 'Text size', option: sizeLabel },
        ...(dark ? [{ action: 'click' as const, role: 'checkbox', name: 'Dark mode' }] : []), { action: 'click', role: 'button', name: 'Save changes' },
      ],
    };
  }
  const customers: string[] = [];
  for (let n = 3 + Math.floor(r() * 2); customers.length < n;) { const c = pick(r, CUSTOMERS[split]); if (!customers.includes(c)) customers.push(c); }
  const orders = customers.map((c, i) => ({ id: String(1040 + Math.floor(r() * 50) * 10 + i), customer: c, item: pick(r, GOODS) }));
  const target = pick(r, orders);
  return {
    key, kind: 'gui', page: `orders.html?orders=${orders.map((o) => `${o.id}:${o.customer}:${o.item}`).join(',')}`, goal: fill(w.ship, { customer: target.customer }),
    expect: { shipped: [target.id] }, difficulty: 1, solution: [{ action: 'click', role: 'button', name: `Ship order ${target.id}` }],
  };
}

export function makeGuiTasks(split: Split, count: number, start = 0): GuiTask[] {
  return Array.from({ length: count }, (_, i) => makeGuiTask(split, start + i));
}
