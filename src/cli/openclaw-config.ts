// `openclaw-rl openclaw-config`: the openclaw.json snippet that points OpenClaw at this server, and the
// commands that install our plugin.
import { fileURLToPath } from 'node:url';
import { defineCommand, opt } from './command.ts';

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

export const openclawConfigCommand = defineCommand({
  name: 'openclaw-config',
  summary: 'print the openclaw.json snippet that points OpenClaw at this server (and loads the plugin)',
  options: {
    'base-url': opt.string("the server's OpenAI-compatible base URL", { defaultText: 'http://$HOST:$PORT/v1, else http://127.0.0.1:30000/v1', placeholder: 'URL', nonEmpty: true }),
    'model-id': opt.string('the model id the server serves (its --served-model-name)', { default: 'policy', placeholder: 'ID', nonEmpty: true }),
    'api-key': opt.string("the server's API key", { default: 'openclaw-rl-local', env: 'OPENCLAW_RL_API_KEY', placeholder: 'KEY' }),
    'with-plugin': opt.flag('also load the openclaw-rl plugin (session ids, main/side turn types, session-end notices)'),
    'context-window': opt.int("the model's context window in tokens", { min: 1, default: 32768 }),
    'max-tokens': opt.int('most tokens per answer OpenClaw asks for', { min: 1, default: 2048 }),
  },
  run: async (o) => {
    const port = process.env.PORT ?? '30000', host = process.env.HOST ?? '127.0.0.1';
    const cfg = openclawConfig({
      baseUrl: o['base-url'] ?? `http://${host}:${port}/v1`, modelId: o['model-id'], apiKey: o['api-key'], withPlugin: o['with-plugin'],
      contextWindow: o['context-window'], maxTokens: o['max-tokens'],
    });
    process.stdout.write(JSON.stringify(cfg, null, 2) + '\n');
    process.stderr.write([
      '',
      '# Merge the JSON above into $OPENCLAW_STATE_DIR/openclaw.json (default ~/.openclaw/openclaw.json).',
      `# The model id must be the server's: start it with  openclaw-rl serve --served-model-name ${o['model-id']} …`,
      ...(o['with-plugin'] ? [
        '# The plugin (session + turn-type headers, session-end notices) is loaded from its folder by the config above; or install it:',
        `#   openclaw plugins install --link ${PLUGIN_DIR} --force --accept-capabilities`,
        '#   openclaw plugins enable openclaw-rl',
        '#   openclaw config set plugins.entries.openclaw-rl.hooks.allowConversationAccess true',
      ] : ['# Add --with-plugin for main/side turn types and session-end notices (recommended).']),
      '# Check: openclaw config validate && openclaw models list   (openclaw-rl/… should be the default)',
      '',
    ].join('\n'));
  },
});
