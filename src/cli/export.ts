// `openclaw-rl export`: turns of a time range as JSON Lines (secrets redacted and token ids left out,
// unless --no-redact: then ids are included, decrypted with the store's key file if need be).
import { resolve } from 'node:path';
import { existsSync, writeFileSync } from 'node:fs';
import { defineCommand, opt, UsageError } from './command.ts';

function time(raw: string, source: string): number {
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw new UsageError(`${source} expects a date or time (ISO 8601, e.g. 2026-11-22 or 2026-11-22T10:00:00Z), got '${raw}'`);
  return t;
}

export const exportCommand = defineCommand({
  name: 'export',
  summary: 'print the recorded turns of a time range as JSON Lines',
  description: 'Print the turns recorded by serve between --from and --to as JSON Lines on stdout (or into --out), ' +
    'with secrets redacted and token ids left out (they decode to the text) unless --no-redact.',
  options: {
    'data-dir': opt.path('the data folder of serve', { default: '.openclaw-rl', env: 'OPENCLAW_RL_DATA_DIR', placeholder: 'DIR' }),
    from: opt.custom('first time included (ISO 8601)', 'TIME', time),
    to: opt.custom('last time included (ISO 8601)', 'TIME', time, { defaultText: 'now' }),
    out: opt.path('write to this file instead of stdout', { placeholder: 'FILE' }),
    'no-redact': opt.flag('keep secrets as recorded, and include the token ids'),
    'key-file': opt.path('the key of token ids stored encrypted (serve --redact all)', { defaultText: '<data-dir>.key', placeholder: 'FILE' }),
  },
  examples: ['openclaw-rl export --from 2026-11-22 > turns.jsonl', 'openclaw-rl export | head -1'],
  run: async (o) => {
    const dir = resolve(o['data-dir']);
    if (!existsSync(dir)) throw new UsageError(`no data folder at ${dir} (pass --data-dir or set OPENCLAW_RL_DATA_DIR)`);
    const { Store, rowForLog } = await import('../store/store.ts');
    const { redactDeep } = await import('../store/redact.ts');
    const store = new Store(dir, { keyFile: o['key-file'] });
    try {
      const rows = store.turnsBetween(o.from ?? 0, o.to ?? Date.now() + 1);
      const lines = rows.map((r) => JSON.stringify(o['no-redact'] ? rowForLog(r, store) : redactDeep(rowForLog(r))));
      const text = lines.join('\n') + (lines.length ? '\n' : '');
      if (o.out) { writeFileSync(o.out, text); process.stderr.write(`wrote ${lines.length} turns to ${o.out}\n`); }
      else process.stdout.write(text);
    } finally {
      store.close();
    }
  },
});
