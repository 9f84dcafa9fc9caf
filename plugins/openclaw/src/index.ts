// The openclaw-rl plugin for OpenClaw. It registers the provider id the server is configured under
// and wraps its stream function so that every model request carries:
//   X-Session-Id  — OpenClaw's session id (empty on compaction calls, which have none)
//   X-Turn-Type   — "main" for user turns, "side" for heartbeat/memory/cron runs and compaction calls
// The run's trigger is read in `before_prompt_build`, which sees it before the model is called.
// When OpenClaw ends a session (`session_end`), the plugin tells the server with
// POST {serverUrl}/sessions/{id}/done, so the session's last turn is closed without waiting for the
// server's idle timeout.

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
  on(hook: string, handler: Hook): void;
  registerProvider(provider: { id: string; label: string; auth: unknown[]; wrapStreamFn: (ctx: { streamFn?: StreamFn }) => StreamFn | undefined }): void;
}

export interface PluginOptions {
  /** the server's OpenAI base URL, e.g. http://127.0.0.1:30000/v1 */
  serverUrl: string;
  apiKey?: string;
  fetch?: typeof fetch;
}

export function createPlugin(o: PluginOptions) {
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
          await doFetch(`${o.serverUrl.replace(/\/+$/, '')}/sessions/${encodeURIComponent(id)}/done`, {
            method: 'POST', headers: o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}, signal: AbortSignal.timeout(5000),
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

export default createPlugin({ serverUrl: process.env.OPENCLAW_RL_URL ?? 'http://127.0.0.1:30000/v1', apiKey: process.env.OPENCLAW_RL_API_KEY });
