// The GUI environment's compact page form and token budgets, pure: parsing Playwright's aria
// snapshot, the compact lines (interactive elements with references and state, rows, status), the
// changes after an action, and cutting to a budget.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAria, compactLines, diffLines, fitLines, cutLabel } from '../../src/env/gui-observe.ts';
import { fitText, observationBudget, roughTokens } from '../../src/env/budget.ts';
import { findRef } from '../../src/env/gui-tasks.ts';

const SIGNUP = `- main [ref=e2]:
  - heading "Create your account" [level=1] [ref=e3]
  - generic [ref=e4]:
    - generic [ref=e5]: Full name
    - textbox "Full name" [ref=e6]: Niels Bohr
    - textbox "Email" [ref=e8]
    - combobox "Plan" [ref=e10]:
      - option "Choose a plan"
      - option "Free" [selected]
      - option "Pro"
    - generic [ref=e11]:
      - checkbox "Send me the newsletter" [checked] [ref=e12]
      - text: Send me the newsletter
    - button "Sign up" [active] [ref=e13]
  - status [ref=e14]: Welcome, Niels Bohr!`;

const ORDERS = `- table "Orders" [ref=e4]:
  - rowgroup [ref=e5]:
    - row [ref=e6]:
      - columnheader "Order" [ref=e7]
      - columnheader "Customer" [ref=e8]
      - columnheader [ref=e11]
  - rowgroup [ref=e12]:
    - row [ref=e13]:
      - cell "1150" [ref=e14]
      - cell "Sam" [ref=e15]
      - cell [ref=e18]:
        - button "Ship order 1150" [ref=e19]: Ship
- status [ref=e34]`;

test('parseAria reads roles, names, attributes, references, text and nesting', () => {
  const [main] = parseAria(SIGNUP);
  assert.equal(main.role, 'main');
  assert.equal(main.ref, 'e2');
  const [heading, form, status] = main.children;
  assert.deepEqual([heading.role, heading.name, heading.attrs, heading.ref], ['heading', 'Create your account', ['level=1'], 'e3']);
  assert.equal(form.children.length, 6);
  assert.deepEqual([form.children[1].name, form.children[1].text], ['Full name', 'Niels Bohr']);
  assert.deepEqual(form.children[3].children.map((o) => [o.name, o.attrs]), [['Choose a plan', []], ['Free', ['selected']], ['Pro', []]]);
  assert.deepEqual([status.role, status.text], ['status', 'Welcome, Niels Bohr!']);
  assert.deepEqual(parseAria('not a snapshot line\n- button "a \\"b\\"" [ref=e1]').map((n) => n.name), ['a "b"']);
});

test('compact lines: interactive elements with state, rows as text, status; the title heading left out', () => {
  assert.deepEqual(compactLines(parseAria(SIGNUP), { maxLabel: 24, title: 'Create your account' }), [
    'e6 textbox "Full name" = Niels Bohr',
    'e8 textbox "Email"',
    'e10 combobox "Plan" = Free (Choose a plan|Pro)',
    'e12 checkbox "Send me the newsletter" [x]',
    'e13 button "Sign up"',
    'status: Welcome, Niels Bohr!',
  ]);
  assert.deepEqual(compactLines(parseAria(ORDERS), { maxLabel: 24, title: 'Orders' }), [
    'row: Order | Customer', 'row: 1150 | Sam', 'e19 button "Ship order 1150"',
  ]);
  // labels cut; an empty status says nothing; another heading stays
  assert.deepEqual(compactLines(parseAria('- heading "Open orders" [ref=e1]\n- button "A very long button label here" [ref=e2]\n- status [ref=e3]'), { maxLabel: 10, title: 'Orders' }),
    ['# Open orde…', 'e2 button "A very lo…"']);
  const table: [string, number, string][] = [['short', 10, 'short'], ['exactly10!', 10, 'exactly10!'], ['eleven chars', 10, 'eleven ch…'], ['  spaced\n out ', 10, 'spaced out']];
  for (const [s, n, want] of table) assert.equal(cutLabel(s, n), want);
});

test('the references of the compact form are found by role and name, as in the full form', () => {
  const lines = compactLines(parseAria(SIGNUP), { maxLabel: 24 }).join('\n');
  assert.equal(findRef(lines, 'button', 'Sign up'), 'e13');
  assert.equal(findRef(lines, 'combobox', 'Plan'), 'e10');
  assert.equal(findRef(SIGNUP, 'combobox', 'Plan'), 'e10');
  assert.equal(findRef(lines, 'button', 'Plan'), null);
});

test('changes after an action: new and changed lines, references gone, other lines gone', () => {
  const table: [string[], string[], string[] | null][] = [
    [['e6 textbox "A"', 'e7 button "B"'], ['e6 textbox "A"', 'e7 button "B"'], null],
    [['e6 textbox "A"', 'e7 button "B"'], ['e6 textbox "A" = x', 'e7 button "B"'], ['e6 textbox "A" = x']],
    [['e9 checkbox "tea" [ ]', 'e11 button "Remove tea"', 'e12 button "Add"'], ['e12 button "Add"'], ['gone: e9 e11']],
    [['status: Saved.', 'e1 button "Save"'], ['e1 button "Save"'], ['gone: status: Saved.']],
    [['status: Saved.'], ['status: Order 1 shipped.'], ['status: Order 1 shipped.']],
    [['row: 1 | Tom | Waiting', 'e19 button "Ship order 1"'], ['row: 1 | Tom | Shipped'], ['row: 1 | Tom | Shipped', 'gone: e19']],
  ];
  for (const [before, after, want] of table) assert.deepEqual(diffLines(before, after), want, JSON.stringify([before, after]));
});

test('token budgets: lines and text cut to fit, with a note; the budget is 3/8 of the context', () => {
  const chars = (s: string) => s.length;
  const lines = ['aaaa', 'bbbb', 'cccc', 'dddd'];
  assert.equal(fitLines('', lines, 100, chars), 'aaaa\nbbbb\ncccc\ndddd');
  const cut = fitLines('', lines, 25, chars);
  assert.ok(cut.length <= 25, cut);
  assert.match(cut, /^aaaa\nbbbb\n… 2 more lines$/);
  assert.equal(fitLines('Head:', ['x'.repeat(50)], 10, chars), 'Head:\n… 1 more line');
  assert.equal(fitText('short', 10, chars), 'short');
  const t = fitText('x'.repeat(100), 30, chars);
  assert.equal(t.length, 30);
  assert.ok(t.endsWith('… (cut)'));
  assert.deepEqual([512, 4096, 32768, 16].map(observationBudget), [192, 1536, 12288, 32]);
  assert.equal(roughTokens('abcdefgh'), 2);
});
