// The token-level protocol of an agent episode. The policy's turns are the exact sampled ids; what
// the environment says back is rendered by the model's own chat template and appended as ids, so
// the next prompt is (previous prompt ids) ++ (sampled ids) ++ (observation ids) — the model's own
// output is never re-tokenized. Tool calls are read in the Qwen/Hermes format:
// <tool_call>{"name": …, "arguments": {…}}</tool_call>.
import type { Tokenizer, ChatMessage, ToolSpec } from '../engine/types.ts';

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

export type ParsedCall = { ok: true; name: string; arguments: Record<string, unknown> } | { ok: false; error: string };

/** The first tool call in a turn's text, or null when the turn makes none (a final answer). */
export function parseToolCall(text: string): ParsedCall | null {
  const start = text.indexOf(TOOL_CALL_OPEN);
  if (start < 0) return null;
  const end = text.indexOf(TOOL_CALL_CLOSE, start);
  const body = text.slice(start + TOOL_CALL_OPEN.length, end < 0 ? undefined : end).trim();
  if (end < 0) return { ok: false, error: `the tool call is not closed with ${TOOL_CALL_CLOSE}` };
  let v: unknown;
  try { v = JSON.parse(body); } catch (e) { return { ok: false, error: `the tool call is not valid JSON (${(e as Error).message})` }; }
  const o = v as { name?: unknown; arguments?: unknown };
  if (!o || typeof o !== 'object' || typeof o.name !== 'string') return { ok: false, error: 'the tool call needs {"name": …, "arguments": {…}}' };
  let args = o.arguments ?? {};
  if (typeof args === 'string') { try { args = JSON.parse(args); } catch { return { ok: false, error: 'the tool call arguments are a string that is not JSON' }; } }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return { ok: false, error: 'the tool call arguments must be an object' };
  return { ok: true, name: o.name, arguments: args as Record<string, unknown> };
}

const MARK = '\u2063openclaw-rl-turn\u2063';

/**
 * The ids that follow a policy turn which stopped at a tool call: the end of the assistant turn,
 * the tool's answer and the opening of the next assistant turn, exactly as the chat template writes
 * them. Rendered once with a marker in place of the assistant's text; everything after the marker is
 * the observation. (Without a chat template: a newline and the observation text.)
 */
export function observationIds(tok: Tokenizer, head: ChatMessage[], tools: ToolSpec[], observation: string, stoppedAtEos: boolean): number[] {
  const text = tok.renderChat([...head, { role: 'assistant', content: MARK }, { role: 'tool', content: observation, tool_call_id: 'call_0' }], { tools, addGenerationPrompt: true });
  let suffix = text.slice(text.lastIndexOf(MARK) + MARK.length);
  if (!tok.chatTemplate) suffix = `\n${observation}\n`;
  // the model may have ended its turn itself (EOS sampled): then its end-of-turn token is already
  // in the sampled ids, and the rendered end of turn before the tool message is left out
  if (stoppedAtEos && tok.chatTemplate) {
    const turnEnd = tok.renderChat([...head, { role: 'assistant', content: MARK }], { tools, addGenerationPrompt: false });
    const close = turnEnd.slice(turnEnd.lastIndexOf(MARK) + MARK.length);
    const closeIds = tok.encode(close, false);
    const ids = tok.encode(suffix, false);
    // drop the leading end-of-turn token the model already produced
    if (closeIds.length > 0 && ids[0] === closeIds[0]) return ids.slice(1);
    return ids;
  }
  return tok.encode(suffix, false);
}

/** The opening messages of an episode. */
export function headMessages(system: string, user: string): ChatMessage[] {
  return [...(system ? [{ role: 'system' as const, content: system }] : []), { role: 'user', content: user }];
}
