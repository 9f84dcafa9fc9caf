// `openclaw-rl openclaw-config`: the openclaw.json snippet that points OpenClaw at this server, and the
// commands that install our plugin.
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { num } from './args.ts';

export const PLUGIN_DIR = fileURLToPath(new URL('../../plugins/openclaw/', import.meta.url));

export interface OpenClawConfigOptions { baseUrl: string; modelId: string; apiKey: string; contextWindow: number; maxTokens: number; withPlugin: boolean; pluginDir?: string }

export function openclawConfig(o: OpenClawConfigOptions): Record<string, unknown> {
  const config: Record<string, unknown> = {
    models: {
      mode: 'merge',
      catalogRefresh: { enabled: false },
      providers: {
        'openclaw-rl': {
          baseUrl: o.baseUrl, apiKey: o.apiKey, api: 'openai-completions',
          models: [{
            id: o.modelId, name: 'OpenClaw-RL policy', reasoning: false, input: ['text'],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: o.contextWindow, maxTokens: o.maxTokens,
            // session ids even without the plugin (headers session_id / x-session-affinity, prompt_cache_key)
            compat: { sendSessionAffinityHeaders: true, supportsPromptCacheKey: true },
          }],
        },
      },
    },
    agents: { defaults: { model: { primary: `openclaw-rl/${o.modelId}` } } },
  };
  if (o.withPlugin) {
    config.plugins = {
      load: { paths: [o.pluginDir ?? PLUGIN_DIR] },
      allow: ['openclaw-rl'],
      entries: { 'openclaw-rl': { enabled: true, hooks: { allowConversationAccess: true } } },
    };
  }
  return config;
}

export async function openclawConfigCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: {
    'base-url': { type: 'string' }, 'model-id': { type: 'string' }, 'api-key': { type: 'string' }, 'with-plugin': { type: 'boolean', default: false },
    'context-window': { type: 'string' }, 'max-tokens': { type: 'string' },
  } });
  const port = process.env.PORT ?? '30000', host = process.env.HOST ?? '127.0.0.1';
  const cfg = openclawConfig({
    baseUrl: o['base-url'] ?? `http://${host}:${port}/v1`, modelId: o['model-id'] ?? 'policy',
    apiKey: o['api-key'] ?? process.env.OPENCLAW_RL_API_KEY ?? 'openclaw-rl-local', withPlugin: o['with-plugin'],
    contextWindow: num(o['context-window'], '--context-window', 32768, (x) => Number.isInteger(x) && x > 0),
    maxTokens: num(o['max-tokens'], '--max-tokens', 2048, (x) => Number.isInteger(x) && x > 0),
  });
  process.stdout.write(JSON.stringify(cfg, null, 2) + '\n');
  process.stderr.write([
    '',
    '# Merge the JSON above into $OPENCLAW_STATE_DIR/openclaw.json (default ~/.openclaw/openclaw.json).',
    `# The model id must be the server's: start it with  openclaw-rl serve --served-model-name ${o['model-id'] ?? 'policy'} …`,
    ...(o['with-plugin'] ? [
      '# The plugin (session + turn-type headers, session-end notices) is loaded from its folder by the config above; or install it:',
      `#   openclaw plugins install --link ${PLUGIN_DIR} --force --accept-capabilities`,
      '#   openclaw plugins enable openclaw-rl',
      '#   openclaw config set plugins.entries.openclaw-rl.hooks.allowConversationAccess true',
      '# (build it first with  npm run build  in the openclaw-rl folder)',
    ] : ['# Add --with-plugin for main/side turn types and session-end notices (recommended).']),
    '# Check: openclaw config validate && openclaw models list   (openclaw-rl/… should be the default)',
    '',
  ].join('\n'));
}
