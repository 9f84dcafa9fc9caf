// Helpers over OpenAI-style chat messages as clients send them.

export interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id?: string; type?: string; function?: { name?: string; arguments?: unknown } }[];
  tool_call_id?: string;
  reasoning_content?: string | null;
  name?: string;
}

/** The text of a message's content, whether a string or an array of parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('\n');
  return '';
}

/** OpenClaw appends this ephemeral block as the last user message of every request; it is never a reply. */
export const OPENCLAW_INTERNAL_CONTEXT = '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>';

export function isInternalContext(m: WireMessage): boolean {
  return m.role === 'user' && contentText(m.content).trimStart().startsWith(OPENCLAW_INTERNAL_CONTEXT);
}
