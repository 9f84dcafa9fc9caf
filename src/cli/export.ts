// `openclaw-rl export`: turns of a time range as JSON Lines (secrets redacted unless --no-redact).
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { existsSync, writeFileSync } from 'node:fs';
import { Store, rowForLog } from '../store/store.ts';
import { redactSecrets } from '../store/redact.ts';
import { UsageError } from './args.ts';

function time(v: string | undefined, flag: string, fallback: number): number {
  if (v === undefined) return fallback;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`${flag} expects a date or time (ISO 8601, e.g. 2026-11-22 or 2026-11-22T10:00:00Z), got '${v}'`);
  return t;
}

export async function exportCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: { 'data-dir': { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, out: { type: 'string' }, 'no-redact': { type: 'boolean', default: false } } });
  const dir = resolve(o['data-dir'] ?? process.env.OPENCLAW_RL_DATA_DIR ?? '.openclaw-rl');
  if (!existsSync(dir)) throw new UsageError(`no data folder at ${dir} (pass --data-dir or set OPENCLAW_RL_DATA_DIR)`);
  const store = new Store(dir);
  try {
    const rows = store.turnsBetween(time(o.from, '--from', 0), time(o.to, '--to', Date.now() + 1));
    const lines = rows.map((r) => { const line = JSON.stringify(rowForLog(r)); return o['no-redact'] ? line : redactSecrets(line); });
    const text = lines.join('\n') + (lines.length ? '\n' : '');
    if (o.out) { writeFileSync(o.out, text); process.stderr.write(`wrote ${lines.length} turns to ${o.out}\n`); }
    else process.stdout.write(text);
  } finally {
    store.close();
  }
}
