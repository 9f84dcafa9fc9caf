// The OPD teacher prompt, built in one place: the request's messages with the hindsight hint added
// to the last user message, as upstream does it (content + "\n\n[user's hint / instruction]\n" +
// hint, stripped). The trainer renders the result through the model's chat template; the chat-model
// recipe teaches stories260k-chat to read hints in exactly this form.
import type { ChatMessage } from '../engine/types.ts';
import { contentText, type WireMessage } from '../conversation/messages.ts';

/** The marker line between the user's own words and the hint. */
export const HINT_MARKER = "[user's hint / instruction]";

/** A user message's text with the hint appended. */
export function userTextWithHint(text: string, hint: string): string {
  return `${text}\n\n${HINT_MARKER}\n${hint}`.trim();
}

/**
 * The request's messages (developer → system, content flattened to text) with the hint appended to
 * the last user message; with no user message, a user message holding only the hint is added.
 */
export function withHint(messages: WireMessage[], hint: string): ChatMessage[] {
  const out: ChatMessage[] = messages.map((m) => ({
    ...(m as object),
    role: (m.role === 'developer' ? 'system' : m.role) as ChatMessage['role'],
    content: m.content === null || m.content === undefined ? '' : contentText(m.content),
  })) as ChatMessage[];
  let i = out.map((m) => m.role).lastIndexOf('user');
  if (i < 0) { out.push({ role: 'user', content: '' }); i = out.length - 1; }
  out[i] = { ...out[i], content: userTextWithHint(contentText(out[i].content), hint) };
  return out;
}
