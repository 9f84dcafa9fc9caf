// `openclaw-rl env-server`: an environment pool served over HTTP, so rollout workers elsewhere can
// lease environments from this machine (see src/env/server.ts for the protocol).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineCommand, opt, UsageError } from './command.ts';
import { modelDir } from './args.ts';
import { ENV_NAMES, SANDBOXED_ENVS } from '../env/names.ts';

export const envServerCommand = defineCommand({
  name: 'env-server',
  summary: 'serve a pool of agent environments (toolcall, terminal, swe, gui) over HTTP for agent train/eval',
  description: `Serves a pool of environments over HTTP: POST /allocate {task_key} → {lease_id} (429 when all
--capacity environments are leased), /heartbeat, /reset {lease_id, task_meta} → {user_msg, tool_schemas},
/exec_tool {lease_id, tool_call}, /evaluate → {score}, /close; GET /stats, /healthz. A lease without a
heartbeat for --lease-ttl-seconds, or whose environment hangs past --call-timeout-seconds on one call, is
reclaimed (410 for its holder). Point 'agent train --env-servers URL,URL' at one or more of these.`,
  options: {
    env: opt.choice(ENV_NAMES, 'which environment to serve', { default: 'toolcall' }),
    capacity: opt.int('environments leased at once', { min: 1, default: 16 }),
    host: opt.string('address to listen on', { default: '127.0.0.1', placeholder: 'HOST' }),
    port: opt.port('port to listen on', { default: 18081, allowZero: true }),
    'lease-ttl-seconds': opt.number('a lease without a heartbeat this long is reclaimed', { gt: 0, default: 60 }),
    'call-timeout-seconds': opt.number('one environment call longer than this marks the environment hung', { gt: 0, default: 120 }),
    'no-python': opt.flag('toolcall: offer only the calculator tool, not the sandboxed python interpreter'),
    model: opt.string('gui, swe: the policy\'s model folder; its tokenizer and context size the prompts and observations (a small model gets the compact forms)', { placeholder: 'DIR', nonEmpty: true }),
  },
  run: async (o) => {
    const { LocalPool } = await import('../env/pool.ts');
    const { startEnvServer } = await import('../env/server.ts');
    const { envFactory } = await import('../env/tasks.ts');
    const { sandboxSupport } = await import('../env/sandbox.ts');
    const sb = sandboxSupport();
    if (!sb.ok) {
      if (SANDBOXED_ENVS.includes(o.env)) throw new Error(`the ${o.env} environment needs the sandbox: ${sb.reason}`);
      process.stderr.write(`env-server: no sandbox (${sb.reason}); the python tool is off, the calculator stays\n`);
    }
    let model: import('../env/budget.ts').ModelBudget | undefined;
    if (o.model) {
      const dir = await modelDir(o.model);
      const { ChatTokenizer } = await import('../engine/embedded/tokenizer.ts');
      const tok = ChatTokenizer.load(dir);
      const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
      const context = Number(config.max_position_embeddings ?? config.n_positions ?? config.max_sequence_length);
      if (!Number.isInteger(context) || context < 2) throw new UsageError(`--model: ${dir}/config.json gives no context length (max_position_embeddings)`);
      model = { contextTokens: context, countTokens: (text) => tok.encode(text, false).length };
    }
    const pool = new LocalPool(envFactory(o.env, { python: !o['no-python'], model }), {
      capacity: o.capacity, leaseTtlMs: o['lease-ttl-seconds'] * 1000, callTimeoutMs: o['call-timeout-seconds'] * 1000,
      log: (l) => process.stderr.write(l + '\n'),
    });
    const server = await startEnvServer(pool, { host: o.host, port: o.port });
    process.stdout.write(`env-server: ${o.env} × ${o.capacity} at ${server.url}\n`);
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
  },
});
