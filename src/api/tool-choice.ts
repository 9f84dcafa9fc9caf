// tool_choice → an output constraint for the engine: "required" and a named function force one
// `<tool_call>{json}</tool_call>` block with valid JSON arguments (constrained decoding), "none" forbids the
// block, "auto" (the default) leaves the model free.
import { badRequest } from './errors.ts';
import type { OutputConstraint } from '../engine/types.ts';
import type { OutputFormat } from './output.ts';
import { minimalLength } from '../engine/embedded/constraint.ts';

export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseToolChoice(body: Record<string, unknown>, tools: { function: { name: string } }[] | undefined): ToolChoice {
  const v = body.tool_choice;
  if (v === undefined || v === null || v === 'auto') return 'auto';
  if (v === 'none') return 'none';
  if (v === 'required') {
    if (!tools?.length) throw badRequest("tool_choice 'required' needs at least one tool in 'tools'", 'tool_choice');
    return 'required';
  }
  if (isObj(v) && v.type === 'function' && isObj(v.function) && typeof v.function.name === 'string') {
    const name = v.function.name;
    if (!tools?.some((t) => t.function.name === name)) throw badRequest(`tool_choice names the function '${name}', which is not in 'tools'`, 'tool_choice');
    return { name };
  }
  throw badRequest(`'tool_choice' must be "none", "auto", "required" or {"type": "function", "function": {"name": …}} (got ${JSON.stringify(v)})`, 'tool_choice');
}

/** The engine constraint for a choice, or undefined for "auto". */
export function constraintFor(choice: ToolChoice, tools: { function: { name: string } }[] | undefined, format: OutputFormat, maxTokens: number,
  chatTemplate: string | null = null): OutputConstraint | undefined {
  if (choice === 'auto') return undefined;
  if (!format.toolCalls) {
    if (choice === 'none') return undefined; // the model has no tool-call format: it cannot call one anyway
    throw badRequest("this model's chat template has no tool-call format, so tool_choice cannot force a call", 'tool_choice');
  }
  if (choice === 'none') return { type: 'forbid', text: '<tool_call>' };
  const names = choice === 'required' ? tools!.map((t) => t.function.name) : [choice.name];
  // the block as the model's template writes it: Qwen's puts the JSON on its own line, others do not
  const nl = !chatTemplate || /<tool_call>\\n|<tool_call>\n/.test(chatTemplate) ? '\n' : '';
  const constraint: OutputConstraint = { type: 'tool_call', names, open: `<tool_call>${nl}`, close: `${nl}</tool_call>` };
  const need = minimalLength(constraint);
  if (maxTokens < need) throw badRequest(`max_tokens ${maxTokens} is too small for a forced tool call: give at least ${need}`, 'max_tokens');
  return constraint;
}
