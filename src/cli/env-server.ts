// `openclaw-rl env-server`: an environment pool served over HTTP, so rollout workers elsewhere can
// lease environments from this machine (see src/env/server.ts for the protocol).
import { parseArgs } from 'node:util';
import { UsageError, num } from './args.ts';
import { LocalPool } from '../env/pool.ts';
import { startEnvServer } from '../env/server.ts';
import { envFactory, ENV_NAMES } from '../env/tasks.ts';
import { sandboxSupport } from '../env/sandbox.ts';

export const ENV_SERVER_HELP = `openclaw-rl env-server --env toolcall|terminal [--capacity 16] [--host 127.0.0.1] [--port 18081]
                       [--lease-ttl-seconds 60] [--call-timeout-seconds 120]

Serves a pool of environments over HTTP: POST /allocate {task_key} → {lease_id} (429 when all
--capacity environments are leased), /heartbeat, /reset {lease_id, task_meta} → {user_msg,
tool_schemas}, /exec_tool {lease_id, tool_call}, /evaluate → {score}, /close; GET /stats, /healthz.
A lease without a heartbeat for --lease-ttl-seconds, or whose environment hangs past
--call-timeout-seconds on one call, is reclaimed (410 for its holder). Point 'agent train
--env-servers URL,URL' at one or more of these.`;

export async function envServerCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: {
    env: { type: 'string' }, capacity: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' },
    'lease-ttl-seconds': { type: 'string' }, 'call-timeout-seconds': { type: 'string' }, help: { type: 'boolean', short: 'h' },
  } });
  if (o.help) { process.stdout.write(ENV_SERVER_HELP + '\n'); return; }
  if (!o.env || !(ENV_NAMES as readonly string[]).includes(o.env)) throw new UsageError(`--env must be one of ${ENV_NAMES.join(', ')}`);
  const pos = (x: number) => x > 0;
  const capacity = num(o.capacity, '--capacity', 16, (x) => Number.isInteger(x) && x > 0);
  const port = num(o.port, '--port', 18081, (x) => Number.isInteger(x) && x >= 0 && x < 65536);
  const host = o.host ?? '127.0.0.1';
  const sb = sandboxSupport();
  if (!sb.ok) {
    if (o.env === 'terminal') throw new Error(`the terminal environment needs the sandbox: ${sb.reason}`);
    process.stderr.write(`env-server: no sandbox (${sb.reason}); the python tool is off, the calculator stays\n`);
  }
  const pool = new LocalPool(envFactory(o.env), {
    capacity, leaseTtlMs: num(o['lease-ttl-seconds'], '--lease-ttl-seconds', 60, pos) * 1000,
    callTimeoutMs: num(o['call-timeout-seconds'], '--call-timeout-seconds', 120, pos) * 1000, log: (l) => process.stderr.write(l + '\n'),
  });
  const server = await startEnvServer(pool, { host, port });
  process.stdout.write(`env-server: ${o.env} × ${capacity} at ${server.url}\n`);
  await new Promise<void>((resolve) => {
    const stop = async (signal: string) => {
      process.stderr.write(`env-server: ${signal}, shutting down…\n`);
      await server.close();
      await pool.shutdown();
      resolve();
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}
