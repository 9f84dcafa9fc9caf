// The next state of a main turn: what the user (or the tools) said after that turn's answer, read
// from the session's next main request. OpenClaw's ephemeral internal-context block is never part
// of it; a parallel tool call's results are all kept. When the new request's history does not
// continue the old one with our answer (edited history, a regenerated answer, a compaction), the
// turn is not paired, and the reason says why.
import { contentText, isInternalContext, type WireMessage } from './messages.ts';

export interface OurAnswer { content: string; toolCalls: { name: string; arguments: string }[] }

export type Pairing =
  | { status: 'paired'; nextState: WireMessage[]; role: 'user' | 'tool' }
  | { status: 'unpaired'; reason: string };

function sameMessage(a: WireMessage, b: WireMessage): boolean {
  return a.role === b.role && contentText(a.content).trim() === contentText(b.content).trim() && (a.tool_call_id ?? null) === (b.tool_call_id ?? null);
}

function normaliseArgs(a: unknown): string {
  if (typeof a !== 'string') return JSON.stringify(a ?? {});
  try { return JSON.stringify(JSON.parse(a)); } catch { return a.trim(); }
}

/** Does this assistant message carry our answer? (tool-call ids may be rewritten by the client) */
function isOurAnswer(m: WireMessage, ours: OurAnswer): boolean {
  if (m.role !== 'assistant') return false;
  if (ours.toolCalls.length > 0) {
    const calls = m.tool_calls ?? [];
    if (calls.length !== ours.toolCalls.length) return false;
    return calls.every((c, i) => c.function?.name === ours.toolCalls[i].name && normaliseArgs(c.function?.arguments) === normaliseArgs(ours.toolCalls[i].arguments));
  }
  return contentText(m.content).trim() === ours.content.trim();
}

export function pairNextState(previousRequest: WireMessage[], ours: OurAnswer, nextRequest: WireMessage[]): Pairing {
  const before = previousRequest.filter((m) => !isInternalContext(m));
  const after = nextRequest.filter((m) => !isInternalContext(m));
  if (after.length <= before.length) return { status: 'unpaired', reason: 'the new request is not longer than the previous one (history was cut or compacted)' };
  for (let i = 0; i < before.length; i++) {
    if (!sameMessage(before[i], after[i])) return { status: 'unpaired', reason: `the history differs at message ${i} (edited, or compacted)` };
  }
  const answer = after[before.length];
  if (answer.role !== 'assistant') return { status: 'unpaired', reason: 'our answer is missing from the history' };
  if (!isOurAnswer(answer, ours)) return { status: 'unpaired', reason: 'the assistant message in the history differs from our answer (regenerated or edited)' };
  const rest = after.slice(before.length + 1);
  const end = rest.findIndex((m) => m.role === 'assistant');
  const next = end < 0 ? rest : rest.slice(0, end);
  if (next.length === 0) return { status: 'unpaired', reason: 'nothing follows our answer' };
  if (next.every((m) => m.role === 'tool')) return { status: 'paired', nextState: next, role: 'tool' };
  return { status: 'paired', nextState: next, role: 'user' };
}
