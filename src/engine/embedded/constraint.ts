// Constrained decoding: which tokens may come next so that the output keeps to an OutputConstraint
// (engine/types.ts). Character-level machines say whether a text keeps the output a prefix of an allowed
// shape; a token is allowed when its whole text does. Pure: the runtime masks the logits of disallowed
// tokens before sampling, so the recorded log-prob is the one of the distribution actually sampled from.
//
// The tool-call machine knows its shortest completion at every point, so a token is allowed only while
// that completion still fits the token budget: the answer is a complete call with valid JSON arguments
// whatever the model's weights.
import type { OutputConstraint } from '../types.ts';

/** A character-level acceptor of prefixes. */
export interface CharMachine {
  /** false (and unchanged meaning: do not use it further) when `ch` leaves the allowed shape */
  push(ch: string): boolean;
  clone(): CharMachine;
  /** the output is complete: only end of sequence may follow */
  readonly done: boolean;
  /** the shortest text that completes the output from here */
  completion(): string;
  /** inside a JSON string, where any text without quotes, backslashes or control characters keeps the state */
  readonly inString?: boolean;
}

const WS = new Set([' ', '\n', '\t', '\r']);
const DIGIT = /[0-9]/, HEX = /[0-9a-fA-F]/;
/** bounds that keep a weak model from looping inside one JSON token */
const MAX_WS_RUN = 8, MAX_NUMBER = 24;

type JsonMode = 'value' | 'objStart' | 'objKey' | 'colon' | 'after' | 'arrStart' | 'string' | 'esc' | 'hex'
  | 'numSign' | 'numZero' | 'numInt' | 'numFrac0' | 'numFrac' | 'numExp0' | 'numExpSign' | 'numExp' | 'literal' | 'end';

/**
 * A JSON value, one character at a time; `objectOnly` requires the value to be an object. The stack holds
 * the open containers ('{' or '['); `end` means the value is complete.
 */
export class JsonMachine implements CharMachine {
  mode: JsonMode = 'value';
  stack = '';
  isKey = false;
  rest = '';
  count = 0;
  ws = 0;
  readonly objectOnly: boolean;

  constructor(objectOnly = false) { this.objectOnly = objectOnly; }

  clone(): JsonMachine {
    const c = new JsonMachine(this.objectOnly);
    c.mode = this.mode; c.stack = this.stack; c.isKey = this.isKey; c.rest = this.rest; c.count = this.count; c.ws = this.ws;
    return c;
  }

  get done(): boolean { return this.mode === 'end'; }
  get inString(): boolean { return this.mode === 'string'; }

  private startValue(ch: string): boolean {
    if (this.objectOnly && this.stack === '' && ch !== '{') return false;
    if (ch === '{') { this.stack += '{'; this.mode = 'objStart'; return true; }
    if (ch === '[') { this.stack += '['; this.mode = 'arrStart'; return true; }
    if (ch === '"') { this.mode = 'string'; this.isKey = false; return true; }
    if (ch === '-') { this.mode = 'numSign'; this.count = 1; return true; }
    if (ch === '0') { this.mode = 'numZero'; this.count = 1; return true; }
    if (DIGIT.test(ch)) { this.mode = 'numInt'; this.count = 1; return true; }
    for (const lit of ['true', 'false', 'null']) if (ch === lit[0]) { this.mode = 'literal'; this.rest = lit.slice(1); return true; }
    return false;
  }

  /** a value just ended: back in its container, or the end */
  private valueDone(): void { this.mode = this.stack === '' ? 'end' : 'after'; }

  private space(ch: string): boolean {
    if (!WS.has(ch)) return false;
    return ++this.ws <= MAX_WS_RUN;
  }

  push(ch: string): boolean {
    const wasWs = WS.has(ch);
    const ok = this.step(ch);
    if (!wasWs) this.ws = 0;
    return ok;
  }

  private step(ch: string): boolean {
    switch (this.mode) {
      case 'value': return this.space(ch) || this.startValue(ch);
      case 'arrStart': if (ch === ']') { this.stack = this.stack.slice(0, -1); this.valueDone(); return true; } return this.space(ch) || this.startValue(ch);
      case 'objStart': case 'objKey':
        if (ch === '}' && this.mode === 'objStart') { this.stack = this.stack.slice(0, -1); this.valueDone(); return true; }
        if (ch === '"') { this.mode = 'string'; this.isKey = true; return true; }
        return this.space(ch);
      case 'colon': if (ch === ':') { this.mode = 'value'; return true; } return this.space(ch);
      case 'after': {
        const top = this.stack[this.stack.length - 1];
        if (ch === ',') { this.mode = top === '{' ? 'objKey' : 'value'; return true; }
        if ((ch === '}' && top === '{') || (ch === ']' && top === '[')) { this.stack = this.stack.slice(0, -1); this.valueDone(); return true; }
        return this.space(ch);
      }
      case 'string':
        if (ch === '"') { if (this.isKey) this.mode = 'colon'; else this.valueDone(); return true; }
        if (ch === '\\') { this.mode = 'esc'; return true; }
        return ch >= ' ';
      case 'esc':
        if (ch === 'u') { this.mode = 'hex'; this.count = 0; return true; }
        if ('"\\/bfnrt'.includes(ch)) { this.mode = 'string'; return true; }
        return false;
      case 'hex':
        if (!HEX.test(ch)) return false;
        if (++this.count === 4) this.mode = 'string';
        return true;
      case 'literal':
        if (ch !== this.rest[0]) return false;
        this.rest = this.rest.slice(1);
        if (this.rest === '') this.valueDone();
        return true;
      case 'end': return false;
      default: return this.number(ch);
    }
  }

  private number(ch: string): boolean {
    const more = (mode: JsonMode) => { if (++this.count > MAX_NUMBER) return false; this.mode = mode; return true; };
    const digit = DIGIT.test(ch);
    switch (this.mode) {
      case 'numSign': return ch === '0' ? more('numZero') : digit ? more('numInt') : false;
      case 'numFrac0': return digit ? more('numFrac') : false;
      case 'numExp0': return ch === '+' || ch === '-' ? more('numExpSign') : digit ? more('numExp') : false;
      case 'numExpSign': return digit ? more('numExp') : false;
      case 'numZero': if (ch === '.') return more('numFrac0'); if (ch === 'e' || ch === 'E') return more('numExp0'); break;
      case 'numInt': if (digit) return more('numInt'); if (ch === '.') return more('numFrac0'); if (ch === 'e' || ch === 'E') return more('numExp0'); break;
      case 'numFrac': if (digit) return more('numFrac'); if (ch === 'e' || ch === 'E') return more('numExp0'); break;
      case 'numExp': if (digit) return more('numExp'); break;
    }
    // the number ended before this character, which belongs to what follows it
    this.valueDone();
    if (this.mode === 'end') return false;
    return this.step(ch);
  }

  completion(): string {
    let s = '';
    switch (this.mode) {
      case 'end': return '';
      case 'value': s = this.objectOnly && this.stack === '' ? '{}' : '0'; break;
      case 'objStart': break;
      case 'objKey': s = '"":0'; break;
      case 'colon': s = ':0'; break;
      case 'string': s = this.isKey ? '":0' : '"'; break;
      case 'esc': s = this.isKey ? 'n":0' : 'n"'; break;
      case 'hex': s = '0'.repeat(4 - this.count) + (this.isKey ? '":0' : '"'); break;
      case 'literal': s = this.rest; break;
      case 'numSign': case 'numFrac0': case 'numExp0': case 'numExpSign': s = '0'; break;
      default: break; // 'after', 'arrStart' and complete numbers need nothing before the closers
    }
    for (let i = this.stack.length - 1; i >= 0; i--) s += this.stack[i] === '{' ? '}' : ']';
    return s;
  }
}

/** `<open>{"name": "<name>", "arguments": <object>}<close>`: the Qwen/Hermes tool-call block (open and close carry the newlines a template puts around the JSON). */
export class ToolCallMachine implements CharMachine {
  private phase = 0;
  private pos = 0;
  private name = '';
  private json = new JsonMachine(true);
  private readonly names: readonly string[];
  private readonly literals: readonly [string, string, string];

  constructor(names: readonly string[], open: string, close: string) {
    this.names = names;
    this.literals = [`${open}{"name": "`, '", "arguments": ', `}${close}`];
  }

  clone(): ToolCallMachine {
    const c = Object.create(ToolCallMachine.prototype) as ToolCallMachine;
    Object.assign(c, this);
    c.json = this.json.clone();
    return c;
  }

  get done(): boolean { return this.phase === 5; }
  get inString(): boolean { return this.phase === 3 && this.json.inString; }

  push(ch: string): boolean {
    switch (this.phase) {
      case 0: case 2: case 4: {
        const lit = this.literals[this.phase / 2];
        if (ch !== lit[this.pos]) return false;
        if (++this.pos === lit.length) { this.phase++; this.pos = 0; }
        return true;
      }
      case 1:
        if (ch === '"' && this.names.includes(this.name)) { this.phase = 2; this.pos = 1; return true; }
        if (!this.names.some((n) => n.startsWith(this.name + ch))) return false;
        this.name += ch;
        return true;
      case 3:
        if (!this.json.push(ch)) return false;
        if (this.json.done) this.phase = 4;
        return true;
      default: return false;
    }
  }

  completion(): string {
    const [open, mid, close] = this.literals;
    const shortestName = () => this.names.filter((n) => n.startsWith(this.name)).reduce((a, b) => (b.length < a.length ? b : a)).slice(this.name.length);
    switch (this.phase) {
      case 0: return open.slice(this.pos) + this.names.reduce((a, b) => (b.length < a.length ? b : a)) + mid + '{}' + close;
      case 1: return shortestName() + mid + '{}' + close;
      case 2: return mid.slice(this.pos) + '{}' + close;
      case 3: return this.json.completion() + close;
      case 4: return close.slice(this.pos);
      default: return '';
    }
  }
}

/** Never lets the output contain `text` (tool_choice "none": no tool-call opener). */
export class ForbidMachine implements CharMachine {
  private tail = '';
  private readonly text: string;
  constructor(text: string) { this.text = text; }
  clone(): ForbidMachine { const c = new ForbidMachine(this.text); c.tail = this.tail; return c; }
  get done(): boolean { return false; }
  push(ch: string): boolean {
    const t = (this.tail + ch).slice(-this.text.length);
    if (t === this.text) return false;
    this.tail = t;
    return true;
  }
  completion(): string { return ''; }
  /** whether appending `text` would spell the forbidden text */
  spells(text: string): boolean { return (this.tail + text).includes(this.text); }
}

export function machineFor(c: OutputConstraint): CharMachine {
  if (c.type === 'tool_call') return new ToolCallMachine(c.names, c.open, c.close);
  return new ForbidMachine(c.text);
}

/** Whether the whole of `text` keeps the output allowed (empty text never does: it would not move on). */
export function accepts(m: CharMachine, text: string): CharMachine | null {
  if (text === '') return null;
  const c = m.clone();
  for (const ch of text) if (!c.push(ch)) return null;
  return c;
}

/** Token ids whose texts start with the same `key` (their first two characters, or all of a shorter text). */
interface Group { key: string; keyPlain: boolean; plain: number[]; other: number[] }

const PLAIN = /^[^"\\\u0000-\u001f]*$/;

/** A vocabulary's token texts, grouped by their first characters for the token filter (built once per model). */
export class TokenTexts {
  readonly texts: readonly string[];
  /** the groups by the first character of their key */
  readonly groups = new Map<string, Group[]>();

  constructor(texts: readonly string[]) {
    this.texts = texts;
    const byKey = new Map<string, Group>();
    texts.forEach((t, id) => {
      if (t === '') return;
      const key = [...t.slice(0, 4)].slice(0, 2).join('');
      let g = byKey.get(key);
      if (!g) byKey.set(key, g = { key, keyPlain: PLAIN.test(key), plain: [], other: [] });
      // plain: may sit inside a JSON string as it is (no quote, backslash or control character)
      (PLAIN.test(t) ? g.plain : g.other).push(id);
    });
    for (const g of byKey.values()) {
      const first = String.fromCodePoint(g.key.codePointAt(0)!);
      const list = this.groups.get(first);
      if (list) list.push(g); else this.groups.set(first, [g]);
    }
  }
}

/**
 * Token ids allowed next. `stopIds` end the sequence (allowed only once the output is complete, or at any
 * time for constraints that never complete); `budget` is how many more tokens may be generated, counting
 * the final stop token. A token is allowed only if the shortest completion after it still fits the budget
 * (each character needs at most one token), so a complete output is always reachable: with `budget` ≥ the
 * shortest completion + 1 at the start, it stays so to the end.
 */
export function allowedTokens(m: CharMachine, vocab: TokenTexts, stopIds: ReadonlySet<number>, budget: number, completes: boolean): number[] {
  const { texts } = vocab;
  const out: number[] = [];
  if (m.done) { for (const id of stopIds) if (id < texts.length) out.push(id); return out; }
  if (m instanceof ForbidMachine) {
    // a token with no text of its own (part of a character) cannot spell anything
    for (let id = 0; id < texts.length; id++) if (stopIds.has(id) || texts[id] === '' || !m.spells(texts[id])) out.push(id);
    return out;
  }
  if (!completes) for (const id of stopIds) if (id < texts.length) out.push(id);
  const rest = completes ? m.completion().length : 0;
  // plain text inside a string leaves the state, and so the shortest completion, as it is
  const plainFits = m.inString === true && (!completes || rest + 1 <= budget - 1);
  const check = (head: CharMachine, id: number, key: string) => {
    if (stopIds.has(id)) return;
    const t = texts[id];
    const next = t.length === key.length ? head : accepts(head, t.slice(key.length));
    if (next === null) return;
    // one character grows the shortest completion by at most 4 (a \u escape): skip the exact check when far from the end
    if (completes && rest + 4 * t.length + 2 > budget - 1 && next.completion().length + 1 > budget - 1) return;
    out.push(id);
  };
  for (const [first, groups] of vocab.groups) {
    const head1 = accepts(m, first);
    if (head1 === null && !(plainFits && PLAIN.test(first))) continue;
    for (const g of groups) {
      const headOf = () => (head1 === null ? null : g.key === first ? head1 : accepts(head1, g.key.slice(first.length)));
      if (plainFits && g.keyPlain) {
        for (const id of g.plain) if (!stopIds.has(id)) out.push(id);
        const head = g.other.length > 0 ? headOf() : null;
        if (head) for (const id of g.other) check(head, id, g.key);
        continue;
      }
      const head = headOf();
      if (head === null) continue;
      for (const id of g.plain) check(head, id, g.key);
      for (const id of g.other) check(head, id, g.key);
    }
  }
  return out;
}

/** Sets every logit outside `allowed` to -Infinity (one row of the logits). */
export function maskLogits(logits: Float32Array, off: number, vocab: number, allowed: readonly number[]): void {
  const keep = new Float32Array(allowed.length);
  allowed.forEach((id, i) => { keep[i] = logits[off + id]; });
  logits.fill(-Infinity, off, off + vocab);
  allowed.forEach((id, i) => { logits[off + id] = keep[i]; });
}

/** What a constraint needs at least, in characters (an upper bound on tokens): for a max_tokens check. */
export function minimalLength(c: OutputConstraint): number {
  return c.type === 'tool_call' ? [...machineFor(c).completion()].length + 1 : 0;
}
