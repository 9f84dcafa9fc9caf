// Judge prompts, written for this project. The PRM prompt asks for one boxed score about whether the
// assistant's answer helped, using what came next as evidence; the hint prompt asks whether what
// came next holds information that would have made the answer better, and if so for a short hint.
// The compact variants say the same in a few lines, with the answer and next state clipped, for
// models whose whole context is a few hundred tokens (the self judge of stories260k-chat): they end
// in the verdict at once, with no reasoning before it.
import type { WireMessage } from '../conversation/messages.ts';
import { contentText } from '../conversation/messages.ts';

export interface JudgeInput {
  /** the assistant's answer as the client saw it (content, and tool calls written out) */
  response: string;
  nextState: { role: 'user' | 'tool'; text: string; looksLikeError: boolean };
  /** the conversation before the answer, shown to the judge only when configured */
  context?: WireMessage[];
}

type Msg = { role: 'system' | 'user'; content: string };

const ROLES = `The next state is one of two kinds:
- role "user": the user's reply to the answer. Thanks, approval, or simply moving on to a new topic means the answer worked. Asking to redo, retry or repeat, asking for a correction or a change, or restating the same request in other words means it did not: treat a change request as negative feedback, not as a neutral new instruction.
- role "tool": output that exists only because the assistant called a tool. A clean result means the call worked; an error caused by the call (bad arguments, a missing file the assistant named, a failing command) means it did not. A successful tool output is not knowledge the assistant should have had beforehand.`;

function contextBlock(context: WireMessage[] | undefined): string {
  if (!context || context.length === 0) return '';
  const lines = context.map((m) => `[${m.role}] ${contentText(m.content) || (m.tool_calls ? JSON.stringify(m.tool_calls.map((t) => t.function)) : '')}`);
  return `## Conversation before the answer\n${lines.join('\n')}\n\n`;
}

function stateBlock(input: JudgeInput): string {
  const warn = input.nextState.role === 'tool' && input.nextState.looksLikeError ? '\n(This tool output contains error-like text.)' : '';
  return `## Next state (role: ${input.nextState.role})\n${input.nextState.text}${warn}`;
}

export function prmPrompt(input: JudgeInput): Msg[] {
  return [
    {
      role: 'system',
      content: `You judge one step of an assistant's work. You see the assistant's answer and the state that followed it, and decide whether the answer achieved what was wanted at that step, using the next state as evidence.

${ROLES}

Score with exactly one of:
\\boxed{1} — the next state shows the answer helped (the user is satisfied or moves on; the tool succeeded).
\\boxed{-1} — the next state shows the answer was wrong, incomplete or unwanted (a redo, correction, change request or restated request; an error caused by the action).
\\boxed{0} — the next state is ambiguous or unrelated.

Think step by step, then end with the boxed score.`,
    },
    {
      role: 'user',
      content: `${contextBlock(input.context)}## Assistant's answer\n${input.response}\n\n${stateBlock(input)}\n\nFirst say whether the next state is (a) progress or approval, (b) a correction, redo or change request, or (c) ambiguous. Then give the score as \\boxed{1}, \\boxed{-1} or \\boxed{0}.`,
    },
  ];
}

export function hintPrompt(input: JudgeInput): Msg[] {
  return [
    {
      role: 'system',
      content: `You extract hindsight hints. You see an assistant's answer at one step and the state that followed it. Decide whether the next state reveals something that, had the assistant known it, would have made that answer better — for example what the user actually wanted.

${ROLES}

Output rules:
- End with exactly one \\boxed{1} (there is a useful hint) or \\boxed{-1} (there is none).
- Only for \\boxed{1}, give a concise, actionable hint of one to three sentences between [HINT_START] and [HINT_END], written as an instruction for the assistant (e.g. "The user wants stories about a dog.").
- For \\boxed{-1}, give no hint block.`,
    },
    { role: 'user', content: `${contextBlock(input.context)}## Assistant's answer\n${input.response}\n\n${stateBlock(input)}\n\nDecide, and if positive give the hint.` },
  ];
}

/** Which prompt set a judge backend wants: the full prompts, or the compact ones for small-context models. */
export type PromptStyle = 'full' | 'compact';

/** Models with at most this many tokens of context get the compact prompts. */
export const COMPACT_CONTEXT_LIMIT = 2048;

/** Characters of the answer and of the next state the compact prompts keep. */
export const COMPACT_ANSWER_CHARS = 100, COMPACT_STATE_CHARS = 160;

/** `text` cut to at most `max` characters at a word boundary, with "…" when something was cut. */
export function clip(text: string, max: number): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

function compactInput(input: JudgeInput): string {
  const warn = input.nextState.role === 'tool' && input.nextState.looksLikeError ? ' (error)' : '';
  return `Answer: ${clip(input.response, COMPACT_ANSWER_CHARS)}\nNext (${input.nextState.role}${warn}): ${clip(input.nextState.text, COMPACT_STATE_CHARS)}`;
}

export function compactPrmPrompt(input: JudgeInput): Msg[] {
  return [
    { role: 'system', content: 'Judge the answer by what came next. \\boxed{1}: the user is pleased or moves on, or the tool worked. \\boxed{-1}: the user asks for a change or a redo, or the tool failed. \\boxed{0}: unclear.' },
    { role: 'user', content: compactInput(input) },
  ];
}

export function compactHintPrompt(input: JudgeInput): Msg[] {
  return [
    { role: 'system', content: 'Does what came next say what the user wants? If so, answer \\boxed{1} and a hint in [HINT_START]…[HINT_END]; if not, answer \\boxed{-1}.' },
    { role: 'user', content: compactInput(input) },
  ];
}

/** The PRM and hint prompt builders of a style. */
export function judgePrompts(style: PromptStyle): { prm: (input: JudgeInput) => Msg[]; hint: (input: JudgeInput) => Msg[] } {
  return style === 'compact' ? { prm: compactPrmPrompt, hint: compactHintPrompt } : { prm: prmPrompt, hint: hintPrompt };
}

/** Error-like text in a tool result (a cue for the judge, not a verdict). */
export function looksLikeError(text: string): boolean {
  return /\b(error|exception|traceback|failed|failure|not found|no such file|permission denied|denied|invalid|cannot|can't|exit (code|status) [1-9]\d*|ENOENT|EACCES|segmentation fault)\b/i.test(text);
}
