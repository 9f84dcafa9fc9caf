// `openclaw-rl rollback --version N`: a running server serves (and trains on from) the weights of
// version N again, published as a new version; samples trained after N are set aside.
import { defineCommand, opt, UsageError } from './command.ts';
import { serverTarget, serverJson } from './server-client.ts';
import type { RollbackResult } from '../trainer/versions.ts';

export const rollbackCommand = defineCommand({
  name: 'rollback',
  summary: 'serve and train on from an earlier weights version of a running server',
  description: 'Ask a running server to load the weights (and optimizer state) of an earlier version, publish them as a new ' +
    'version and train on from there; samples trained by the undone steps are set aside. Version 0 is the base model. ' +
    'The versions kept are listed on the dashboard (GET /admin/dashboard/versions).',
  options: {
    version: opt.int('the version to go back to', { min: 0, placeholder: 'N' }),
    url: opt.string('the server', { defaultText: 'http://$HOST:$PORT, else http://127.0.0.1:30000', placeholder: 'URL', nonEmpty: true }),
    'api-key': opt.string("the server's API key", { env: ['OPENCLAW_RL_API_KEY', 'SGLANG_API_KEY'], placeholder: 'KEY' }),
    json: opt.flag('print the result as one JSON object'),
  },
  check: (o) => { if (o.version === undefined) throw new UsageError('--version N is required (the versions kept are on the dashboard)'); },
  examples: ['openclaw-rl rollback --version 3'],
  run: async (o) => {
    const r = await serverJson<RollbackResult>(serverTarget(o), '/admin/rollback', { method: 'POST', body: { version: o.version } });
    if (o.json) { process.stdout.write(JSON.stringify(r) + '\n'); return; }
    process.stdout.write(`rolled back to version ${r.target}: now serving version ${r.version} (step ${r.step}; was version ${r.from.version}, step ${r.from.step}); ${r.samplesSetAside} sample(s) set aside\n`);
  },
});
