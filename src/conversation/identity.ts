// Which session a request belongs to, and whether it is a main-line turn (trained on) or a side turn
// (served, never trained on). Pure functions over the request's headers and body; each result says
// which signal decided it.
import { createHash } from 'node:crypto';
import { contentText, type WireMessage } from './messages.ts';

export type Headers = Record<string, string | string[] | undefined>;

export type SessionSource = 'header' | 'affinity' | 'prompt_cache_key' | 'body_session_id' | 'body_user' | 'runtime_footer' | 'fingerprint';
export type TurnTypeSource = 'header' | 'compaction' | 'heartbeat' | 'label' | 'default';

function header(h: Headers, name: string): string | undefined {
  const v = h[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** OpenClaw's affinity values and cache keys carry a `:<n>` suffix after the session id. */
function stripCounter(v: string): string { return v.replace(/:\d+$/, ''); }

const RUNTIME_FOOTER = /(?:^|\n)Runtime:[^\n]*?\bsessionId=([^\s|]+)/;

export function resolveSession(h: Headers, body: { messages?: WireMessage[]; prompt_cache_key?: unknown; session_id?: unknown; user?: unknown }): { id: string; source: SessionSource } {
  const explicit = header(h, 'x-session-id')?.trim();
  if (explicit) return { id: explicit, source: 'header' };
  const affinity = (header(h, 'session_id') ?? header(h, 'x-session-affinity'))?.trim();
  if (affinity) return { id: stripCounter(affinity), source: 'affinity' };
  if (typeof body.prompt_cache_key === 'string' && body.prompt_cache_key.trim()) return { id: stripCounter(body.prompt_cache_key.trim()), source: 'prompt_cache_key' };
  if (typeof body.session_id === 'string' && body.session_id.trim()) return { id: body.session_id.trim(), source: 'body_session_id' };
  if (typeof body.user === 'string' && body.user.trim()) return { id: body.user.trim(), source: 'body_user' };
  const messages = body.messages ?? [];
  const firstUser = messages.find((m) => m.role === 'user');
  const footer = firstUser ? RUNTIME_FOOTER.exec(contentText(firstUser.content)) : null;
  if (footer) return { id: footer[1], source: 'runtime_footer' };
  // last resort: the conversation's opening (system prompt + first user message) names it
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content)).join('\n');
  const hash = createHash('sha256').update(system).update('\u0000').update(firstUser ? contentText(firstUser.content) : '').digest('hex');
  return { id: `fp-${hash.slice(0, 16)}`, source: 'fingerprint' };
}

export function classifyTurn(h: Headers, body: { messages?: WireMessage[]; tools?: unknown[] }): { type: 'main' | 'side'; source: TurnTypeSource } {
  const t = header(h, 'x-turn-type')?.trim().toLowerCase();
  if (t === 'main' || t === 'side') return { type: t, source: 'header' };
  const messages = body.messages ?? [];
  const system = messages.filter((m) => m.role === 'system').map((m) => contentText(m.content)).join('\n');
  const firstUser = contentText(messages.find((m) => m.role === 'user')?.content);
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  if (!hasTools && (/context summarization assistant/i.test(system) || firstUser.trimStart().startsWith('<conversation>'))) return { type: 'side', source: 'compaction' };
  if (/Follow the heartbeat monitor scratch context/.test(firstUser) || /Follow the heartbeat monitor scratch context/.test(system)) return { type: 'side', source: 'heartbeat' };
  if (/You are labeling the supplied message/i.test(system)) return { type: 'side', source: 'label' };
  return { type: 'main', source: 'default' };
}

export function sessionDone(h: Headers, body: { session_done?: unknown }): boolean {
  const v = header(h, 'x-session-done')?.trim().toLowerCase();
  return v === '1' || v === 'true' || v === 'yes' || body.session_done === true;
}
