// The openclaw-rl plugin for OpenClaw. It registers the provider id the server is configured under
// and wraps its stream function so that every model request carries:
//   X-Session-Id  — OpenClaw's session id (empty on compaction calls, which have none)
//   X-Turn-Type   — "main" for user turns, "side" for heartbeat/memory/cron runs and compaction calls
// The run's trigger is read in `before_prompt_build`, which sees it before the model is called.
// When OpenClaw ends a session (`session_end`), the plugin tells the server with
// POST {serverUrl}/sessions/{id}/done, so the session's last turn is closed without waiting for the
// server's idle timeout.
// Where the server is: the plugin's own config entry (plugins.entries.openclaw-rl.config.serverUrl / apiKey,
// declared in openclaw.plugin.json), else the openclaw-rl provider's baseUrl / apiKey in the same OpenClaw
// config, else $OPENCLAW_RL_URL / $OPENCLAW_RL_API_KEY, else http://127.0.0.1:30000/v1 without a key.

export const PROVIDER_ID = 'openclaw-rl';
/** run triggers whose model calls are not the user's conversation */
export const SIDE_TRIGGERS = new Set(['heartbeat', 'memory', 'cron']);
const MAX_SESSIONS = 10_000;

export function turnTypeFor(sessionId: string, trigger: string | undefined): 'main' | 'side' {
  if (!sessionId) return 'side'; // compaction summaries run outside any session
  return trigger && SIDE_TRIGGERS.has(trigger) ? 'side' : 'main';
}

export function requestHeaders(sessionId: string, trigger: string | undefined): Record<string, string> {
  return { 'X-Session-Id': sessionId, 'X-Turn-Type': turnTypeFor(sessionId, trigger) };
}

type Hook = (event: Record<string, unknown> | undefined, ctx: Record<string, unknown> | undefined) => unknown;
type StreamFn = (model: unknown, context: unknown, options?: Record<string, unknown>) => unknown;
export interface PluginApi {
  /** this plugin's `plugins.entries.<id>.config`, validated by OpenClaw against the manifest's configSchema */
  pluginConfig?: Record<string, unknown>;
  /** the whole OpenClaw config */
  config?: Record<string, unknown>;
  on(hook: string, handler: Hook): void;
  registerProvider(provider: { id: string; label: string; auth: unknown[]; wrapStreamFn: (ctx: { streamFn?: StreamFn }) => StreamFn | undefined }): void;
}

export interface PluginOptions {
  /** the server's OpenAI base URL, e.g. http://127.0.0.1:30000/v1; wins over the config and the environment */
  serverUrl?: string;
  apiKey?: string;
  fetch?: typeof fetch;
  env?: Record<string, string | undefined>;
}

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:30000/v1';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
const field = (o: unknown, ...path: string[]): unknown => path.reduce<unknown>((x, k) => (x && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined), o);

/** The server's URL and key: options, then the plugin's config entry, then the provider entry, then the environment. */
export function serverSettings(o: PluginOptions, api: Pick<PluginApi, 'pluginConfig' | 'config'>): { serverUrl: string; apiKey?: string } {
  const env = o.env ?? process.env;
  const provider = field(api.config, 'models', 'providers', PROVIDER_ID);
  return {
    serverUrl: str(o.serverUrl) ?? str(api.pluginConfig?.serverUrl) ?? str(field(provider, 'baseUrl')) ?? str(env.OPENCLAW_RL_URL) ?? DEFAULT_SERVER_URL,
    apiKey: str(o.apiKey) ?? str(api.pluginConfig?.apiKey) ?? str(field(provider, 'apiKey')) ?? str(env.OPENCLAW_RL_API_KEY),
  };
}

export function createPlugin(o: PluginOptions = {}) {
  const triggers = new Map<string, string>(); // sessionId → trigger of its current run
  const remember = (sessionId: string, trigger: string) => {
    triggers.delete(sessionId);
    triggers.set(sessionId, trigger);
    if (triggers.size > MAX_SESSIONS) triggers.delete(triggers.keys().next().value!);
  };
  const doFetch = o.fetch ?? globalThis.fetch;
  return {
    id: PROVIDER_ID,
    name: 'OpenClaw-RL',
    /** for tests and diagnostics */
    triggers,
    register(api: PluginApi): void {
      const server = serverSettings(o, api);
      api.on('before_prompt_build', (_event, ctx) => {
        const id = typeof ctx?.sessionId === 'string' ? ctx.sessionId : '';
        if (id) remember(id, typeof ctx?.trigger === 'string' ? ctx.trigger : '');
        return {};
      });
      api.on('session_end', async (event, ctx) => {
        const id = (typeof ctx?.sessionId === 'string' && ctx.sessionId) || (typeof event?.sessionId === 'string' && event.sessionId) || '';
        if (!id) return;
        triggers.delete(id);
        try {
          await doFetch(`${server.serverUrl.replace(/\/+$/, '')}/sessions/${encodeURIComponent(id)}/done`, {
            method: 'POST', headers: server.apiKey ? { authorization: `Bearer ${server.apiKey}` } : {}, signal: AbortSignal.timeout(5000),
          });
        } catch {
          // the server ends idle sessions by itself; a lost notice only delays that
        }
      });
      api.registerProvider({
        id: PROVIDER_ID, label: 'OpenClaw-RL', auth: [],
        wrapStreamFn: (ctx) => ctx.streamFn && ((model, context, options) => {
          const sessionId = typeof options?.sessionId === 'string' ? options.sessionId : '';
          const headers = { ...(options?.headers as Record<string, string> | undefined), ...requestHeaders(sessionId, triggers.get(sessionId)) };
          return ctx.streamFn!(model, context, { ...options, headers });
        }),
      });
    },
  };
}

export default createPlugin();
