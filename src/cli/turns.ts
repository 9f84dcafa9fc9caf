// `openclaw-rl turns`: each turn with its text, reward, hint and versions, joined — read from the data
// folder (read-only, so it is safe beside a running server). Texts are redacted.
import { parseArgs } from 'node:util';
import { resolve, join } from 'node:path';
import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { UsageError } from './args.ts';
import { listTurns, type TurnView, type TurnFilter } from '../dashboard/data.ts';

function time(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`${flag} expects a date or time (ISO 8601), got '${v}'`);
  return t;
}

const oneLine = (s: string, max = 160) => { const t = s.replace(/\s+/g, ' ').trim(); return t.length > max ? `${t.slice(0, max - 1)}…` : t; };

export function formatTurn(t: TurnView): string {
  const j = t.judgement, s = t.sample;
  const reward = j?.status === 'done' && j.score !== null ? (j.score > 0 ? `+${j.score}` : String(j.score)) : '–';
  const trained = s && s.trainedByStep !== null ? `, trained by step ${s.trainedByStep} into v${s.trainedIntoVersion}` : s ? `, sample ${s.status}` : '';
  const lines = [
    `#${t.id} ${t.createdAt} session ${t.sessionId} ${t.turnType}${t.index >= 0 ? ` #${t.index}` : ''} (${t.status}) — sampled with v${t.sampledVersion}, reward ${reward}${trained}`,
    `  user:   ${oneLine(t.prompt)}`,
    `  answer: ${oneLine(t.answer)}`,
  ];
  if (t.nextState.text !== null) lines.push(`  next:   ${oneLine(t.nextState.text)}`);
  else if (t.nextState.reason) lines.push(`  next:   (${t.nextState.status}: ${t.nextState.reason})`);
  if (j?.hint) lines.push(`  hint:   ${oneLine(j.hint)}`);
  if (j && j.votes.length) lines.push(`  votes:  ${j.votes.map((v) => `${v.kind} ${v.score ?? (v.error ? 'error' : '∅')}`).join(', ')}`);
  return lines.join('\n');
}

/** `--reward -1` as `--reward=-1` (parseArgs takes a value starting with a dash for a flag). */
function joinNegativeReward(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--reward' && /^-\d+$/.test(argv[i + 1] ?? '')) { out.push(`--reward=${argv[i + 1]}`); i++; } else out.push(argv[i]);
  }
  return out;
}

export async function turnsCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: joinNegativeReward(argv), strict: true, options: {
    'data-dir': { type: 'string' }, session: { type: 'string' }, reward: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
    limit: { type: 'string' }, type: { type: 'string' }, json: { type: 'boolean', default: false },
  } });
  const f: TurnFilter = { session: o.session, from: time(o.from, '--from'), to: time(o.to, '--to') };
  if (o.reward !== undefined) {
    if (!['-1', '0', '1', '+1'].includes(o.reward)) throw new UsageError(`--reward must be -1, 0 or 1, got '${o.reward}'`);
    f.reward = Number(o.reward) as -1 | 0 | 1;
  }
  if (o.type !== undefined) {
    if (o.type !== 'main' && o.type !== 'side') throw new UsageError(`--type must be main or side`);
    f.turnType = o.type;
  }
  if (o.limit !== undefined) {
    const n = Number(o.limit);
    if (!Number.isInteger(n) || n < 1 || n > 500) throw new UsageError(`--limit expects 1..500, got '${o.limit}'`);
    f.limit = n;
  } else f.limit = 20;
  const dir = resolve(o['data-dir'] ?? process.env.OPENCLAW_RL_DATA_DIR ?? '.openclaw-rl');
  const file = join(dir, 'openclaw-rl.sqlite');
  if (!existsSync(file)) throw new UsageError(`no store at ${file} (pass --data-dir or set OPENCLAW_RL_DATA_DIR)`);
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    const turns = listTurns({ db }, f).reverse(); // oldest first, the newest at the bottom of the terminal
    if (o.json) { for (const t of turns) process.stdout.write(JSON.stringify(t) + '\n'); return; }
    process.stdout.write(turns.length ? turns.map(formatTurn).join('\n\n') + '\n' : 'no turns match\n');
  } finally {
    db.close();
  }
}
