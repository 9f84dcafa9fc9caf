// `openclaw-rl turns`: each turn with its text, reward, hint and versions, joined — read from the data
// folder (read-only, so it is safe beside a running server). Texts are redacted.
import { resolve, join } from 'node:path';
import { existsSync } from 'node:fs';
import { defineCommand, opt, UsageError } from './command.ts';
import type { TurnView, TurnFilter } from '../dashboard/data.ts';

function time(raw: string, source: string): number {
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw new UsageError(`${source} expects a date or time (ISO 8601, e.g. 2026-11-22 or 2026-11-22T10:00:00Z), got '${raw}'`);
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
  if (j?.rule) lines.push(`  rule:   ${j.rule}`);
  if (j && j.votes.length) lines.push(`  votes:  ${j.votes.map((v) => `${v.kind} ${v.score ?? (v.error ? 'error' : '∅')}`).join(', ')}`);
  return lines.join('\n');
}

export const turnsCommand = defineCommand({
  name: 'turns',
  summary: 'show recorded turns with their reward, hint and weights versions',
  description: 'Print the turns recorded by serve, each joined with its judgement (majority reward, votes, hint) and its ' +
    'training sample (the version it was sampled with, the step that trained it and the version that step made). ' +
    'Reads the data folder read-only, so it is safe while the server runs. Texts are redacted.',
  options: {
    'data-dir': opt.path('the data folder of serve', { default: '.openclaw-rl', env: 'OPENCLAW_RL_DATA_DIR', placeholder: 'DIR' }),
    session: opt.string('only this session', { placeholder: 'ID', nonEmpty: true }),
    reward: opt.choice(['-1', '0', '1'], "only turns the judge scored so (the majority of its votes)"),
    type: opt.choice(['main', 'side'], 'only main or side turns'),
    from: opt.custom('first time included (ISO 8601)', 'TIME', time),
    to: opt.custom('times before this (ISO 8601)', 'TIME', time),
    limit: opt.int('at most this many turns, the newest', { min: 1, max: 500, default: 20 }),
    json: opt.flag('one JSON object per turn'),
  },
  examples: ['openclaw-rl turns --reward -1', 'openclaw-rl turns --session conv-3 --json'],
  run: async (o) => {
    const file = join(resolve(o['data-dir']), 'openclaw-rl.sqlite');
    if (!existsSync(file)) throw new UsageError(`no store at ${file} (pass --data-dir or set OPENCLAW_RL_DATA_DIR)`);
    const { DatabaseSync } = await import('node:sqlite');
    const { listTurns } = await import('../dashboard/data.ts');
    const f: TurnFilter = { session: o.session, from: o.from, to: o.to, limit: o.limit, turnType: o.type, reward: o.reward === undefined ? undefined : Number(o.reward) as -1 | 0 | 1 };
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      db.exec('PRAGMA busy_timeout = 5000');
      const turns = listTurns({ db }, f).reverse(); // oldest first: the newest ends at the bottom of the terminal
      if (o.json) { for (const t of turns) process.stdout.write(JSON.stringify(t) + '\n'); return; }
      process.stdout.write(turns.length ? turns.map(formatTurn).join('\n\n') + '\n' : 'no turns match\n');
    } finally {
      db.close();
    }
  },
});
