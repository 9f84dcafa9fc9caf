// `openclaw-rl serve-tinker`: the embedded CPU engine behind the Tinker HTTP API, so Tinker clients
// (the Python SDK, tinker-cookbook recipes, OpenClaw-RL's Tinker mode, `serve --engine tinker`) train
// and sample on a machine without a GPU.
import { resolve } from 'node:path';
import { defineCommand, opt, UsageError } from './command.ts';
import { modelDir, modelOption, kernelOption, threadsOption } from './args.ts';

const OPTIONS = {
  model: modelOption,
  host: opt.string('address to listen on (a non-loopback address needs --api-key or --allow-insecure-bind)', { default: '127.0.0.1', placeholder: 'ADDR', nonEmpty: true }),
  port: opt.port('port to listen on (SkyRL uses 8000 too)', { default: 8000, env: 'PORT', allowZero: true }),
  'api-key': opt.string('key clients must send as X-API-Key (prefer the environment: flags show in ps)', { env: 'OPENCLAW_RL_TINKER_API_KEY', placeholder: 'KEY', nonEmpty: true }),
  'allow-insecure-bind': opt.flag('allow a non-loopback --host without an API key'),
  'data-dir': opt.path('where tinker:// checkpoints are kept', { default: '.openclaw-rl-tinker', placeholder: 'DIR' }),
  'served-model-name': opt.string('the base model name clients ask for', { defaultText: "the model folder's name", placeholder: 'NAME', nonEmpty: true }),
  'long-poll-seconds': opt.int('how long retrieve_future holds a poll before answering try_again', { min: 1, max: 40, default: 25 }),
  'session-idle-seconds': opt.int('end a session (its samplers and training client) after this long without a heartbeat or call; sessions survive restarts', { min: 10, default: 600 }),
  kernel: kernelOption,
  threads: threadsOption,
};

export const serveTinkerCommand = defineCommand({
  name: 'serve-tinker',
  summary: 'serve the embedded CPU engine under the Tinker API (training and sampling clients)',
  description: 'Expose the embedded CPU engine under the Tinker HTTP API (default http://127.0.0.1:8000): sessions, a LoRA ' +
    'training client (forward_backward with cross_entropy, importance_sampling or ppo; optim_step), save/load weights by ' +
    'tinker:// URI, sampling clients with exact token ids and log-probs, and futures. One training client at a time.',
  options: OPTIONS,
  examples: [
    'openclaw-rl serve-tinker --model ./stories260k-hf --port 8000',
    'openclaw-rl serve --engine tinker --tinker-url http://127.0.0.1:8000 --model ./stories260k-hf',
  ],
  check: (o) => {
    if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(o.host) && !o['api-key'] && !o['allow-insecure-bind']) {
      throw new UsageError(`--host ${o.host} is not loopback: set --api-key (or OPENCLAW_RL_TINKER_API_KEY), or pass --allow-insecure-bind`);
    }
  },
  run: async (o) => {
    const { EmbeddedEngine } = await import('../engine/embedded/engine.ts');
    const { TinkerServer } = await import('../engine/tinker/server.ts');
    const dir = await modelDir(o.model);
    process.stderr.write(`loading ${dir}…\n`);
    const engine = await EmbeddedEngine.load(dir, { kernel: o.kernel, threads: o.threads });
    const modelName = o['served-model-name'] ?? engine.info.modelId;
    const server = new TinkerServer({
      engine, modelName, dataDir: resolve(o['data-dir']), host: o.host, port: o.port, apiKey: o['api-key'],
      longPollMs: o['long-poll-seconds'] * 1000, sessionIdleMs: o['session-idle-seconds'] * 1000, log: (l) => process.stderr.write(l + '\n'),
    });
    const running = await server.listen().catch(async (e) => { await engine.close(); throw e; });
    process.stderr.write(`openclaw-rl: Tinker API for '${modelName}' (${engine.info.kernel} × ${engine.info.threads}) at ${running.url} — checkpoints in ${resolve(o['data-dir'])}${o['api-key'] ? ', API key required' : ''}\n`);
    await new Promise<void>((resolveStop) => {
      const stop = async (signal: string) => {
        process.stderr.write(`openclaw-rl serve-tinker: ${signal}, shutting down…\n`);
        await running.close();
        await engine.close();
        resolveStop();
      };
      process.once('SIGINT', () => void stop('SIGINT'));
      process.once('SIGTERM', () => void stop('SIGTERM'));
    });
  },
});
