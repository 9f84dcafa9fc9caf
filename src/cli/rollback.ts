// `openclaw-rl rollback --version N`: a running server serves (and trains on from) the weights of
// version N again, published as a new version; samples trained after N are set aside.
import { parseArgs } from 'node:util';
import { UsageError } from './args.ts';
import { serverTarget, serverJson } from './server-client.ts';
import type { RollbackResult } from '../trainer/versions.ts';

export async function rollbackCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: { version: { type: 'string' }, url: { type: 'string' }, 'api-key': { type: 'string' }, json: { type: 'boolean', default: false } } });
  if (o.version === undefined) throw new UsageError('--version N is required (see the versions on the dashboard, or GET /admin/dashboard/versions)');
  const version = Number(o.version);
  if (!Number.isInteger(version) || version < 0) throw new UsageError(`--version expects a non-negative integer, got '${o.version}'`);
  const r = await serverJson<RollbackResult>(serverTarget(o), '/admin/rollback', { method: 'POST', body: { version } });
  if (o.json) { process.stdout.write(JSON.stringify(r) + '\n'); return; }
  process.stdout.write(`rolled back to version ${r.target}: now serving version ${r.version} (step ${r.step}; was version ${r.from.version}, step ${r.from.step}); ${r.samplesSetAside} sample(s) set aside\n`);
}
