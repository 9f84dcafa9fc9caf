// `openclaw-rl openclaw-config`: the openclaw.json snippet that points OpenClaw at this server, and the
// commands that install our plugin.
import { fileURLToPath } from 'node:url';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineCommand, opt, UsageError } from './command.ts';
import { defaultModelId } from './args.ts';
import { cachedSnapshot } from '../engine/embedded/resolve-model.ts';

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
      // the plugin reads the server's URL and key from its own entry (configSchema in openclaw.plugin.json)
      entries: { 'openclaw-rl': { enabled: true, hooks: { allowConversationAccess: true }, config: { serverUrl: o.baseUrl, apiKey: o.apiKey } } },
    };
  }
  return config;
}

/** What a running server says about the model it serves (GET /v1/models), or why it could not be asked. */
export async function servedModel(baseUrl: string, apiKey: string | undefined): Promise<{ id: string; contextLength?: number } | { error: string }> {
  try {
    const r = await fetch(`${baseUrl.replace(/\/+$/, '')}/models`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(3000) });
    if (!r.ok) return { error: `GET /models answered ${r.status}` };
    const m = ((await r.json()) as { data?: { id?: unknown; max_model_len?: unknown; context_length?: unknown }[] }).data?.[0];
    if (!m || typeof m.id !== 'string') return { error: 'GET /models listed no model' };
    const ctx = m.max_model_len ?? m.context_length;
    return { id: m.id, contextLength: typeof ctx === 'number' && ctx > 0 ? ctx : undefined };
  } catch (e) {
    return { error: ((e as Error).cause as Error | undefined)?.message ?? (e as Error).message };
  }
}

/** The context length a model folder (or a cached Hugging Face id) declares in its config.json. */
export function declaredContextLength(spec: string): number | undefined {
  const dir = existsSync(spec) ? spec : cachedSnapshot(spec);
  if (!dir || !existsSync(join(dir, 'config.json'))) return undefined;
  try {
    const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const n = c.max_position_embeddings ?? c.n_positions ?? c.max_sequence_length;
    return typeof n === 'number' && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** OpenClaw's maxTokens when not given: a quarter of the context (room for the prompt), at most 2048. */
export const defaultMaxTokens = (contextWindow: number) => Math.max(1, Math.min(2048, Math.floor(contextWindow / 4)));

export const openclawConfigCommand = defineCommand({
  name: 'openclaw-config',
  summary: 'print the openclaw.json snippet that points OpenClaw at this server (and loads the plugin)',
  description: 'Print the openclaw.json snippet that makes the openclaw-rl server OpenClaw\'s default model. The model id, ' +
    'context window and answer length come from the running server (GET /v1/models at --base-url); when none answers, ' +
    'from --model (the folder or id serve is given, as serve names it); flags override both.',
  options: {
    'base-url': opt.string("the server's OpenAI-compatible base URL", { defaultText: 'http://$HOST:$PORT/v1, else http://127.0.0.1:30000/v1', placeholder: 'URL', nonEmpty: true }),
    model: opt.string('the model serve serves (folder or Hugging Face id), used when no server answers', { env: 'OPENCLAW_RL_MODEL', placeholder: 'DIR|ID', nonEmpty: true }),
    'model-id': opt.string('the model id (serve\'s --served-model-name)', { defaultText: "the server's, else --model's name", placeholder: 'ID', nonEmpty: true }),
    'api-key': opt.string("the server's API key", { default: 'openclaw-rl-local', env: 'OPENCLAW_RL_API_KEY', placeholder: 'KEY' }),
    'with-plugin': opt.flag('also load the openclaw-rl plugin (session ids, main/side turn types, session-end notices)'),
    'context-window': opt.int("the model's context window in tokens", { min: 1, defaultText: "the served model's" }),
    'max-tokens': opt.int('most tokens per answer OpenClaw asks for', { min: 1, defaultText: 'a quarter of the context window, at most 2048' }),
  },
  run: async (o) => {
    const port = process.env.PORT ?? '30000', host = process.env.HOST ?? '127.0.0.1';
    const baseUrl = o['base-url'] ?? `http://${host}:${port}/v1`;
    const notes: string[] = [];
    const needServer = o['model-id'] === undefined || o['context-window'] === undefined;
    const served = needServer ? await servedModel(baseUrl, o['api-key']) : null;
    const fromServer = served && 'id' in served ? served : null;
    if (fromServer && o['model-id'] !== undefined && o['model-id'] !== fromServer.id) notes.push(`# Warning: the server at ${baseUrl} serves '${fromServer.id}', not '${o['model-id']}': requests will get 404.`);
    const modelId = o['model-id'] ?? fromServer?.id ?? (o.model !== undefined ? defaultModelId(o.model) : undefined);
    if (modelId === undefined) {
      throw new UsageError(`cannot tell the served model's id: no server answered at ${baseUrl}/models (${served && 'error' in served ? served.error : ''}); ` +
        'start openclaw-rl serve first (or pass --base-url), or pass --model DIR|ID (what serve is given) or --model-id ID');
    }
    let contextWindow = o['context-window'] ?? fromServer?.contextLength ?? (o.model !== undefined ? declaredContextLength(o.model) : undefined);
    if (contextWindow === undefined) {
      contextWindow = 32768;
      notes.push(`# Warning: the context window is unknown (no server answered at ${baseUrl}, and no readable --model): assumed ${contextWindow}; pass --context-window N.`);
    }
    const maxTokens = o['max-tokens'] ?? defaultMaxTokens(contextWindow);
    const cfg = openclawConfig({ baseUrl, modelId, apiKey: o['api-key'], withPlugin: o['with-plugin'], contextWindow, maxTokens });
    process.stdout.write(JSON.stringify(cfg, null, 2) + '\n');
    const source = o['model-id'] === undefined && fromServer ? `the server at ${baseUrl}` : o['model-id'] !== undefined ? '--model-id' : `--model ${o.model}`;
    process.stderr.write([
      '',
      '# Merge the JSON above into $OPENCLAW_STATE_DIR/openclaw.json (default ~/.openclaw/openclaw.json).',
      `# Model '${modelId}' (from ${source}), context window ${contextWindow}, max tokens ${maxTokens}.`,
      ...notes,
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
