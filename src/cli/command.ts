// The CLI layer: every `openclaw-rl` command is one declaration, and this file turns declarations into
// parsing (node:util parseArgs), validation, per-command help and "did you mean" suggestions.
//
// Adding a command is one `defineCommand` call in its own file under src/cli/, plus its entry in the
// COMMANDS list of src/cli/main.ts:
//
//   export const fooCommand = defineCommand({
//     name: 'foo',                              // 'bench foo' for a subcommand of the `bench` group
//     summary: 'one line for the command list',
//     description: 'a paragraph for `openclaw-rl foo --help` (optional)',
//     options: {
//       model: opt.string('a Hugging Face model folder or id', { env: 'OPENCLAW_RL_MODEL', placeholder: 'DIR' }),
//       port: opt.port('port to listen on', { default: 30000, env: 'PORT' }),
//       steps: opt.int('optimizer steps', { min: 1, default: 3 }),
//       kernel: opt.choice(['wasm', 'ts'], 'matrix kernel'),
//       json: opt.flag('print one JSON object on stdout'),
//     },
//     check: (o) => { if (…) throw new UsageError('…'); },   // rules that span options (optional)
//     run: async (o) => { … },                               // o.port is a number, o.kernel 'wasm' | 'ts' | undefined
//   });
//
// Each option is declared once: its type, default, help text, validator and environment fallback. Every value
// (command line, then `--config FILE` where the command accepts one, then environment, then default) is
// validated before `run` is called, so a bad value exits 2 before any model loads. A validator throws
// UsageError; `run` throws UsageError for usage problems it can only see later, any other error for runtime
// failures. Import heavy modules (engine, store) inside `run` with `await import(…)` so --help stays fast.
//
// Exit codes: 0 success, 1 runtime failure, 2 usage error (bad command, flag or value).
import { parseArgs } from 'node:util';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export class UsageError extends Error { override name = 'UsageError'; }

export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** One option: how it is written, shown and validated. `T` is the type `run` receives. */
export interface Option<T> {
  readonly type: 'string' | 'boolean';
  readonly help: string;
  /** the value's name in help (`--port N`) */
  readonly placeholder?: string;
  readonly short?: string;
  /** may be given more than once; the value is an array */
  readonly multiple?: boolean;
  /** environment variables consulted, in order, when the flag is not given */
  readonly env?: readonly string[];
  readonly default?: T;
  /** shown in help when the default is computed rather than a constant */
  readonly defaultText?: string;
  readonly choices?: readonly string[];
  /** converts and validates one raw value; throws UsageError naming `source` */
  readonly parse: (raw: string, source: string) => unknown;
  readonly hidden?: boolean;
}

export type Options = Record<string, Option<unknown>>;
export type Values<O extends Options> = { -readonly [K in keyof O]: O[K] extends Option<infer T> ? T : never };

interface Extra<T> {
  default?: T;
  env?: string | readonly string[];
  short?: string;
  placeholder?: string;
  defaultText?: string;
  hidden?: boolean;
}
type Out<T, E> = E extends { default: T } ? T : T | undefined;

function make<T, E extends Extra<T>>(type: 'string' | 'boolean', help: string, parse: (raw: string, source: string) => T, extra: E | undefined,
  more: Partial<Option<T>> = {}): Option<Out<T, E>> {
  const env = extra?.env === undefined ? undefined : typeof extra.env === 'string' ? [extra.env] : extra.env;
  return { type, help, parse, ...more, ...extra, env } as Option<Out<T, E>>;
}

const bad = (source: string, what: string, raw: string) => new UsageError(`${source} expects ${what}, got '${raw}'`);

function number(raw: string, source: string, what: string, ok: (x: number) => boolean, integer: boolean): number {
  const x = raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isFinite(x) || (integer && !Number.isInteger(x)) || !ok(x)) throw bad(source, what, raw);
  return x;
}

function range(min: number | undefined, max: number | undefined, gt: number | undefined): string {
  const parts = [];
  if (gt !== undefined) parts.push(`> ${gt}`);
  if (min !== undefined) parts.push(`≥ ${min}`);
  if (max !== undefined) parts.push(`≤ ${max}`);
  return parts.join(' and ');
}

/** The option kinds. Each returns an Option whose value type has `undefined` unless a default is given. */
export const opt = {
  string<E extends Extra<string>>(help: string, extra?: E & { nonEmpty?: boolean }) {
    return make('string', help, (raw, source) => {
      if (extra?.nonEmpty && raw.trim() === '') throw new UsageError(`${source} must not be empty`);
      return raw;
    }, extra, { placeholder: 'TEXT' });
  },
  /** a boolean switch (`--json`); false unless given */
  flag(help: string, extra?: { env?: string; hidden?: boolean; short?: string }) {
    return make('boolean', help, (raw, source) => {
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off|)$/i.test(raw)) return false;
      throw bad(source, 'true or false', raw);
    }, { ...extra, default: false as boolean });
  },
  int<E extends Extra<number>>(help: string, extra?: E & { min?: number; max?: number }) {
    const what = `an integer${extra?.min !== undefined || extra?.max !== undefined ? ` ${range(extra?.min, extra?.max, undefined)}` : ''}`;
    return make('string', help, (raw, source) => number(raw, source, what, (x) =>
      (extra?.min === undefined || x >= extra.min) && (extra?.max === undefined || x <= extra.max), true), extra, { placeholder: 'N' });
  },
  number<E extends Extra<number>>(help: string, extra?: E & { min?: number; max?: number; gt?: number }) {
    const r = range(extra?.min, extra?.max, extra?.gt);
    const what = `a number${r ? ` ${r}` : ''}`;
    return make('string', help, (raw, source) => number(raw, source, what, (x) =>
      (extra?.min === undefined || x >= extra.min) && (extra?.max === undefined || x <= extra.max) && (extra?.gt === undefined || x > extra.gt), false),
    extra, { placeholder: 'X' });
  },
  /** a TCP port, 1–65535; 0 (any free port) only with `allowZero` */
  port<E extends Extra<number>>(help: string, extra?: E & { allowZero?: boolean }) {
    const lo = extra?.allowZero ? 0 : 1;
    const what = `a port number from 1 to 65535${lo === 0 ? ' (or 0 for any free port)' : ''}`;
    return make('string', help, (raw, source) => number(raw, source, what, (x) => x >= lo && x <= 65535, true), extra, { placeholder: 'PORT' });
  },
  choice<const C extends readonly string[], E extends Extra<C[number]>>(choices: C, help: string, extra?: E) {
    return make('string', help, (raw, source) => {
      if (choices.includes(raw)) return raw as C[number];
      throw new UsageError(`${source} must be one of ${choices.join(', ')}; got '${raw}'${suggest(raw, choices, '')}`);
    }, extra, { placeholder: choices.join('|'), choices });
  },
  /** a path that must name an existing file */
  file<E extends Extra<string>>(help: string, extra?: E) {
    return make('string', help, (raw, source) => {
      if (!existsSync(raw) || !statSync(raw).isFile()) throw new UsageError(`${source}: no file at ${raw}`);
      return raw;
    }, extra, { placeholder: 'FILE' });
  },
  /** a path that must name an existing folder, holding `contains` when given */
  dir<E extends Extra<string>>(help: string, extra?: E & { contains?: string }) {
    return make('string', help, (raw, source) => {
      if (!existsSync(raw) || !statSync(raw).isDirectory()) throw new UsageError(`${source}: no folder at ${raw}`);
      if (extra?.contains && !existsSync(join(raw, extra.contains))) throw new UsageError(`${source}: ${extra.contains} not found in ${raw}`);
      return raw;
    }, extra, { placeholder: 'DIR' });
  },
  /** a path that need not exist yet (an output file or folder) */
  path<E extends Extra<string>>(help: string, extra?: E) {
    return make('string', help, (raw, source) => {
      if (raw.trim() === '') throw new UsageError(`${source} must not be empty`);
      return raw;
    }, extra, { placeholder: 'PATH' });
  },
  /** any value, converted by `parse` (which throws UsageError) */
  custom<T, E extends Extra<T>>(help: string, placeholder: string, parse: (raw: string, source: string) => T, extra?: E) {
    return make('string', help, parse, extra, { placeholder });
  },
  /** a string option that may repeat (`--stop a --stop b`) */
  list(help: string, extra?: { placeholder?: string; hidden?: boolean }) {
    return { type: 'string', help, multiple: true, placeholder: 'TEXT', ...extra, default: [], parse: (raw: string) => raw } as Option<string[]>;
  },
};

export interface CommandSpec<O extends Options> {
  /** 'serve', or 'bench engine' for a member of a group */
  readonly name: string;
  readonly summary: string;
  readonly description?: string;
  readonly options: O;
  /** accept `--config FILE` (and this environment variable): a JSON object of long option names and values */
  readonly configFile?: { env?: string };
  readonly examples?: readonly string[];
  /** rules spanning several options, checked with the values before `run` */
  readonly check?: (values: Values<O>) => void;
  readonly run: (values: Values<O>) => Promise<void | number>;
}

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly hidden?: boolean;
  help(): string;
  /** parses and validates argv; returns the run, or throws UsageError */
  prepare(argv: readonly string[], env?: NodeJS.ProcessEnv): () => Promise<void | number>;
}

export function defineCommand<O extends Options>(spec: CommandSpec<O>): Command & { spec: CommandSpec<O>; parse(argv: readonly string[], env?: NodeJS.ProcessEnv): Values<O> } {
  const parse = (argv: readonly string[], env: NodeJS.ProcessEnv = process.env) => parseValues(spec, argv, env);
  return {
    name: spec.name, summary: spec.summary, spec, parse,
    help: () => commandHelp(spec),
    prepare(argv, env) { const values = parse(argv, env); return () => spec.run(values); },
  };
}

/** Levenshtein distance, for suggestions. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** " (did you mean --x?)" for the closest candidate, or '' when none is close. */
export function suggest(word: string, candidates: readonly string[], prefix = '--'): string {
  let best = '', bestD = Infinity;
  for (const c of candidates) {
    const d = c.startsWith(word) || word.startsWith(c) ? Math.min(1, editDistance(word, c)) : editDistance(word, c);
    if (d < bestD) { best = c; bestD = d; }
  }
  return best && bestD <= Math.max(2, Math.floor(word.length / 3)) ? ` (did you mean ${prefix}${best}?)` : '';
}

function configValues(file: string, source: string): Record<string, unknown> {
  if (!existsSync(file)) throw new UsageError(`config file not found: ${file} (from ${source})`);
  let raw: unknown;
  try { raw = JSON.parse(readFileSync(file, 'utf8')); } catch (e) { throw new UsageError(`config file ${file} is not valid JSON: ${(e as Error).message}`); }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new UsageError(`config file ${file} must hold a JSON object of option names and values`);
  return raw as Record<string, unknown>;
}

function parseValues<O extends Options>(spec: CommandSpec<O>, argv: readonly string[], env: NodeJS.ProcessEnv): Values<O> {
  const options = { ...spec.options } as Options;
  const parserOptions: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {};
  for (const [name, o] of Object.entries(options)) parserOptions[name] = { type: o.type, multiple: !!o.multiple, ...(o.short ? { short: o.short } : {}) };
  if (spec.configFile) parserOptions.config = { type: 'string' };
  const known = Object.keys(parserOptions).filter((n) => !options[n]?.hidden);
  // a negative number after a string option is its value (`--reward -1`), not a cluster of short flags
  const args = argv.map((a, i) => (i > 0 && /^-\d/.test(a) && /^--[^=]+$/.test(argv[i - 1]) && parserOptions[argv[i - 1].slice(2)]?.type === 'string' ? `\0${a}` : a));
  const joined = args.flatMap((a, i) => (args[i + 1]?.startsWith('\0') ? [`${a}=${args[i + 1].slice(1)}`] : a.startsWith('\0') ? [] : [a]));
  const { tokens } = parseArgs({ args: joined, options: parserOptions, strict: false, allowPositionals: true, tokens: true });
  const given: Record<string, string[]> = {};
  for (const t of tokens) {
    if (t.kind === 'positional') throw new UsageError(`unexpected argument '${t.value}'${suggest(t.value, known, '--')}; see openclaw-rl ${spec.name} --help`);
    if (t.kind !== 'option') continue;
    const decl = parserOptions[t.name];
    if (!decl) throw new UsageError(`unknown option '${t.rawName}'${t.rawName.startsWith('--') ? suggest(t.name, known) : ''}; see openclaw-rl ${spec.name} --help`);
    if (decl.type === 'string' && t.value === undefined) throw new UsageError(`${t.rawName} needs a value${t.rawName.startsWith('--') ? ` (write ${t.rawName}=VALUE for a value that begins with '-')` : ''}`);
    if (decl.type === 'boolean' && t.inlineValue) throw new UsageError(`${t.rawName} is a switch and takes no value`);
    if (decl.type === 'string' && !decl.multiple && given[t.name]) throw new UsageError(`--${t.name} is given more than once`);
    (given[t.name] ??= []).push(t.value ?? 'true');
  }
  let fromFile: Record<string, unknown> = {};
  let fileName = '';
  if (spec.configFile) {
    const file = given.config?.[0] ?? (spec.configFile.env ? env[spec.configFile.env] : undefined);
    if (file) {
      fileName = file;
      fromFile = configValues(file, given.config ? '--config' : spec.configFile.env!);
      for (const k of Object.keys(fromFile)) {
        if (k !== 'config' && !options[k]) throw new UsageError(`config file ${file}: unknown option '${k}'${suggest(k, known, '')}`);
      }
    }
  }
  const values: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(options)) {
    const convert = (raw: string, source: string) => o.parse(raw, source);
    if (given[name]) {
      values[name] = o.multiple ? given[name].map((r) => convert(r, `--${name}`)) : o.type === 'boolean' ? true : convert(given[name][0], `--${name}`);
      continue;
    }
    const f = fromFile[name];
    if (f !== undefined && f !== null) {
      const src = `'${name}' in ${fileName}`;
      if (o.multiple) values[name] = (Array.isArray(f) ? f : [f]).map((x) => convert(String(x), src));
      else if (typeof f === 'object') throw new UsageError(`${src} must be a string, number or boolean`);
      else values[name] = convert(String(f), src);
      continue;
    }
    const envName = o.env?.find((e) => env[e] !== undefined && env[e] !== '');
    if (envName) { values[name] = o.multiple ? [convert(env[envName]!, envName)] : convert(env[envName]!, `${envName} (environment)`); continue; }
    values[name] = o.default;
  }
  spec.check?.(values as Values<O>);
  return values as Values<O>;
}

const WIDTH = 110;

function wrap(text: string, width: number, indent: string): string {
  const out: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(' ')) {
      if (line && (line + ' ' + word).length > width) { out.push(line); line = word; } else line = line ? `${line} ${word}` : word;
    }
    out.push(line);
  }
  return out.join('\n' + indent);
}

function optionLine(name: string, o: Option<unknown>): [string, string] {
  const flag = `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.placeholder ?? 'VALUE'}` : ''}`;
  const notes: string[] = [];
  const d = o.defaultText ?? (o.type === 'boolean' || o.multiple || o.default === undefined ? undefined : String(o.default));
  if (d !== undefined) notes.push(`default ${d}`);
  if (o.env?.length) notes.push(`env ${o.env.join(', ')}`);
  if (o.multiple) notes.push('repeatable');
  return [flag, notes.length ? `${o.help} (${notes.join('; ')})` : o.help];
}

export function formatOptions(rows: [string, string][]): string {
  const w = Math.min(34, Math.max(...rows.map(([f]) => f.length)) + 2);
  return rows.map(([f, h]) => {
    const pad = f.length + 2 > w ? `  ${f}\n${' '.repeat(w + 2)}` : `  ${f.padEnd(w)}`;
    return pad + wrap(h, WIDTH - w - 2, ' '.repeat(w + 2));
  }).join('\n');
}

function commandHelp(spec: Pick<CommandSpec<Options>, 'name' | 'summary' | 'description' | 'options' | 'configFile' | 'examples'>): string {
  const rows = Object.entries(spec.options).filter(([, o]) => !o.hidden).map(([n, o]) => optionLine(n, o));
  if (spec.configFile) rows.push(['--config FILE', `read options from a JSON object of long option names and values; flags on the command line win, the file wins over the environment${spec.configFile.env ? ` (env ${spec.configFile.env})` : ''}`]);
  rows.push(['-h, --help', 'show this help']);
  return [
    `Usage: openclaw-rl ${spec.name} [options]`,
    '',
    wrap(spec.description ?? spec.summary, WIDTH, ''),
    '',
    'Options:',
    formatOptions(rows),
    ...(spec.examples?.length ? ['', 'Examples:', ...spec.examples.map((e) => `  ${e}`)] : []),
    '',
    'Exit codes: 0 success, 1 runtime failure, 2 usage error.',
  ].join('\n');
}
