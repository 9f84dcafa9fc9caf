// How the GUI environment writes a page for the policy, pure. Two forms of the same accessibility
// tree (Playwright's aria snapshot in its `ai` mode):
// - full: the snapshot as Playwright writes it (every node, nested, `[ref=e6]` references);
// - compact: for models with small contexts — only what the policy can act on or needs to read,
//   one line each, labels cut short: `e6 textbox "Full name" = Ada`, `e12 checkbox "Dark mode" [x]`,
//   `e10 combobox "Plan" = Free (Pro|Team)`, `e13 button "Sign up"`, table rows as their cells' text
//   (`row: 1191 | Tom | chair | Waiting`) and status messages (`status: Saved.`).
// After an action the compact form sends only what changed (new or changed lines, and the references
// gone), which loses nothing because the episode's prompt keeps every earlier observation.
// Observations are cut to a token budget, counted with the served model's tokenizer.

/** One node of an aria snapshot. */
export interface AriaNode {
  role: string;
  name: string | null;
  /** bracketed attributes without the reference: 'checked', 'selected', 'level=1', 'disabled' … */
  attrs: string[];
  ref: string | null;
  /** the text after the colon (a text box's value, a status message, a button's text) */
  text: string | null;
  children: AriaNode[];
}

const LINE = /^(\s*)- (\/?[\w-]+)(?: "((?:[^"\\]|\\.)*)")?((?: \[[^\]]*\])*)(?::(?: (.*))?)?$/;

/** Parse an aria snapshot (YAML-like text) into a forest of nodes; lines it cannot read are skipped. */
export function parseAria(snapshot: string): AriaNode[] {
  const roots: AriaNode[] = [];
  const stack: { indent: number; node: AriaNode }[] = [];
  for (const line of snapshot.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const indent = m[1].length;
    const attrs = [...(m[4] ?? '').matchAll(/\[([^\]]*)\]/g)].map((a) => a[1]);
    const ref = attrs.find((a) => a.startsWith('ref='))?.slice(4) ?? null;
    let text = m[5]?.trim() ?? null;
    if (text && /^"(?:[^"\\]|\\.)*"$/.test(text)) text = JSON.parse(text) as string;
    const node: AriaNode = { role: m[2], name: m[3] === undefined ? null : m[3].replace(/\\(.)/g, '$1'), attrs: attrs.filter((a) => !a.startsWith('ref=')), ref, text: text || null, children: [] };
    while (stack.length && stack.at(-1)!.indent >= indent) stack.pop();
    (stack.length ? stack.at(-1)!.node.children : roots).push(node);
    stack.push({ indent, node });
  }
  return roots;
}

/** `s` cut to at most `n` characters, an ellipsis marking the cut. */
export function cutLabel(s: string, n: number): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > n ? `${t.slice(0, Math.max(1, n - 1))}…` : t;
}

const VALUE_ROLES = new Set(['textbox', 'searchbox', 'spinbutton', 'slider']);
const CHECK_ROLES = new Set(['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio']);
const CHOICE_ROLES = new Set(['combobox', 'listbox']);
const PLAIN_ROLES = new Set(['button', 'link', 'tab', 'menuitem', 'treeitem']);
const MESSAGE_ROLES = new Set(['status', 'alert', 'log']);

/** The text a node shows: its name, else its text, else its children's. */
function shown(n: AriaNode): string {
  return n.name ?? n.text ?? n.children.map(shown).filter(Boolean).join(' ');
}

/**
 * The compact form's lines: interactive elements with their references and state, table rows as
 * text, status messages; headings equal to the page title are left out.
 */
export function compactLines(nodes: AriaNode[], o: { maxLabel: number; title?: string }): string[] {
  const out: string[] = [];
  const q = (s: string) => `"${cutLabel(s, o.maxLabel)}"`;
  const walk = (n: AriaNode) => {
    const label = n.name ?? '';
    if (n.ref && VALUE_ROLES.has(n.role)) { out.push(`${n.ref} ${n.role} ${q(label)}${n.text ? ` = ${cutLabel(n.text, o.maxLabel)}` : ''}`); return; }
    if (n.ref && CHECK_ROLES.has(n.role)) { out.push(`${n.ref} ${n.role} ${q(label)} ${n.attrs.some((a) => a === 'checked' || a === 'checked=true') ? '[x]' : n.attrs.includes('checked=mixed') ? '[-]' : '[ ]'}`); return; }
    if (n.ref && CHOICE_ROLES.has(n.role)) {
      const options = n.children.filter((c) => c.role === 'option');
      const selected = options.find((c) => c.attrs.includes('selected'));
      const others = options.filter((c) => c !== selected).map((c) => cutLabel(c.name ?? shown(c), o.maxLabel));
      out.push(`${n.ref} ${n.role} ${q(label)}${selected ? ` = ${cutLabel(selected.name ?? shown(selected), o.maxLabel)}` : ''}${others.length ? ` (${others.join('|')})` : ''}`);
      return;
    }
    if (n.ref && PLAIN_ROLES.has(n.role)) { out.push(`${n.ref} ${n.role} ${q(label || shown(n))}${n.attrs.includes('disabled') ? ' (disabled)' : ''}`); return; }
    if (MESSAGE_ROLES.has(n.role)) { const t = n.text ?? shown(n); if (t) out.push(`${n.role}: ${cutLabel(t, o.maxLabel * 2)}`); return; }
    if (n.role === 'heading') { const t = shown(n); if (t && t !== o.title) out.push(`# ${cutLabel(t, o.maxLabel)}`); return; }
    if (n.role === 'row') {
      const cells = n.children.filter((c) => c.role === 'cell' || c.role === 'columnheader' || c.role === 'gridcell' || c.role === 'rowheader');
      const texts = cells.map((c) => cutLabel(c.name ?? c.text ?? '', o.maxLabel)).filter(Boolean);
      if (texts.length) out.push(`row: ${texts.join(' | ')}`);
    }
    n.children.forEach(walk);
  };
  nodes.forEach(walk);
  return out;
}

const refOf = (line: string) => /^(e\d+) /.exec(line)?.[1] ?? null;

/**
 * What changed between two compact observations, as lines: every line new or changed (in page
 * order), then `gone: e19 e26` for references no longer on the page and `gone: <line>` for other lines
 * that went without a replacement. Null when nothing changed.
 */
export function diffLines(before: string[], after: string[]): string[] | null {
  const b = new Set(before), a = new Set(after);
  const added = after.filter((l) => !b.has(l));
  const refsNow = new Set(after.map(refOf).filter(Boolean));
  const kindsNow = new Set(added.map((l) => l.split(':')[0]));
  const gone = before.filter((l) => !a.has(l));
  const goneRefs = gone.map(refOf).filter((r): r is string => r !== null && !refsNow.has(r));
  const goneText = gone.filter((l) => refOf(l) === null && !kindsNow.has(l.split(':')[0]));
  const out = [...added, ...(goneRefs.length ? [`gone: ${goneRefs.join(' ')}`] : []), ...goneText.map((l) => `gone: ${l}`)];
  return out.length ? out : null;
}

/**
 * Lines joined (after `header`, if any) while they fit in `budget` tokens as `count` measures the
 * text, then a note of how many were left out. The header always stays.
 */
export function fitLines(header: string, lines: string[], budget: number, count: (s: string) => number): string {
  const more = (k: number) => (k ? `\n… ${k} more line${k === 1 ? '' : 's'}` : '');
  let text = header;
  for (let i = 0; i < lines.length; i++) {
    const next = text ? `${text}\n${lines[i]}` : lines[i];
    if (count(next + more(lines.length - i - 1)) > budget) return text + more(lines.length - i);
    text = next;
  }
  return text;
}
