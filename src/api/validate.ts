// Validation of POST /v1/chat/completions bodies: every field the server uses is checked for type
// and range, with an OpenAI-style error naming the parameter. Unknown fields are ignored.
import { badRequest } from './errors.ts';
import type { WireMessage } from '../conversation/messages.ts';

export interface ChatRequest {
  model: string;
  messages: WireMessage[];
  tools?: { type: 'function'; function: { name: string; description?: string; parameters?: unknown } }[];
  /** choices to sample for this prompt (each recorded as its own turn) */
  n: number;
  stream: boolean;
  includeUsage: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop: string[];
  seed?: number;
  logprobs: boolean;
  topLogprobs: number;
  templateKwargs: Record<string, unknown>;
  raw: Record<string, unknown>;
}

/** the most choices one request may ask for (`n`) */
export const MAX_CHOICES = 16;

/** Larger max_tokens values are refused rather than quietly clamped (no model has such a context). */
export const MAX_TOKENS_LIMIT = 2 ** 24;

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);
export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An optional number field: undefined when absent or null, a 400 naming the field when not a finite number that passes `check`. */
export function num(body: Record<string, unknown>, key: string, check: (x: number) => boolean, what: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || !check(v)) throw badRequest(`'${key}' must be ${what} (got ${JSON.stringify(v)})`, key);
  return v;
}

function validateContent(m: Record<string, unknown>, i: number): void {
  const c = m.content;
  const param = `messages[${i}].content`;
  if (c === null || c === undefined) {
    if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) return;
    throw badRequest(`${param} is missing (only an assistant message with tool_calls may have no content)`, param);
  }
  if (typeof c === 'string') return;
  if (!Array.isArray(c)) throw badRequest(`${param} must be a string or an array of content parts`, param);
  c.forEach((p, j) => {
    if (!isObj(p) || typeof p.type !== 'string') throw badRequest(`${param}[${j}] must be an object with a 'type'`, `${param}[${j}]`);
    if (p.type === 'text') { if (typeof p.text !== 'string') throw badRequest(`${param}[${j}].text must be a string`, `${param}[${j}].text`); return; }
    throw badRequest(`${param}[${j}] has type '${p.type}': this model accepts text only`, `${param}[${j}].type`, 'unsupported_content');
  });
}

/** `stop`: a string or at most 4 strings (OpenAI's limit); absent or null → none. */
export function parseStop(body: Record<string, unknown>): string[] {
  if (typeof body.stop === 'string') return [body.stop];
  if (Array.isArray(body.stop)) {
    if (body.stop.length > 4 || !body.stop.every((s) => typeof s === 'string')) throw badRequest("'stop' must be a string or an array of at most 4 strings", 'stop');
    return body.stop as string[];
  }
  if (body.stop !== undefined && body.stop !== null) throw badRequest("'stop' must be a string or an array of strings", 'stop');
  return [];
}

export function validateChatRequest(body: unknown): ChatRequest {
  if (!isObj(body)) throw badRequest('the request body must be a JSON object');
  if (typeof body.model !== 'string' || !body.model) throw badRequest("'model' is required and must be a string", 'model');
  if (!Array.isArray(body.messages)) throw badRequest("'messages' is required and must be an array", 'messages');
  if (body.messages.length === 0) throw badRequest("'messages' must contain at least one message", 'messages');
  body.messages.forEach((m, i) => {
    if (!isObj(m)) throw badRequest(`messages[${i}] must be an object`, `messages[${i}]`);
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) throw badRequest(`messages[${i}].role must be one of system, developer, user, assistant, tool (got ${JSON.stringify(m.role)})`, `messages[${i}].role`);
    validateContent(m, i);
    if (m.tool_calls !== undefined && m.tool_calls !== null) {
      if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) throw badRequest(`messages[${i}].tool_calls must be an array on an assistant message`, `messages[${i}].tool_calls`);
      m.tool_calls.forEach((tc, j) => {
        const param = `messages[${i}].tool_calls[${j}]`;
        if (!isObj(tc) || !isObj(tc.function) || typeof tc.function.name !== 'string') throw badRequest(`${param} needs function.name`, param);
        const args = tc.function.arguments;
        if (args !== undefined && args !== null && typeof args !== 'string') throw badRequest(`${param}.function.arguments must be a string (JSON text), got ${Array.isArray(args) ? 'an array' : typeof args}`, `${param}.function.arguments`);
        if (tc.id !== undefined && tc.id !== null && typeof tc.id !== 'string') throw badRequest(`${param}.id must be a string`, `${param}.id`);
      });
    }
    if (m.reasoning_content !== undefined && m.reasoning_content !== null && typeof m.reasoning_content !== 'string') throw badRequest(`messages[${i}].reasoning_content must be a string`, `messages[${i}].reasoning_content`);
    for (const key of ['tool_call_id', 'name'] as const) {
      if (m[key] !== undefined && m[key] !== null && typeof m[key] !== 'string') throw badRequest(`messages[${i}].${key} must be a string`, `messages[${i}].${key}`);
    }
  });
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw badRequest("'tools' must be an array", 'tools');
    body.tools.forEach((t, i) => {
      if (!isObj(t) || t.type !== 'function' || !isObj(t.function) || typeof t.function.name !== 'string' || !t.function.name) throw badRequest(`tools[${i}] must be {type: "function", function: {name, …}}`, `tools[${i}]`);
      const { description, parameters } = t.function;
      if (description !== undefined && description !== null && typeof description !== 'string') throw badRequest(`tools[${i}].function.description must be a string`, `tools[${i}].function.description`);
      if (parameters !== undefined && parameters !== null && !isObj(parameters)) throw badRequest(`tools[${i}].function.parameters must be a JSON Schema object`, `tools[${i}].function.parameters`);
    });
  }
  const n = num(body, 'n', (x) => Number.isInteger(x) && x >= 1 && x <= MAX_CHOICES, `an integer from 1 to ${MAX_CHOICES}`);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw badRequest("'stream' must be a boolean", 'stream');
  const maxA = num(body, 'max_completion_tokens', (x) => Number.isInteger(x) && x >= 1 && x <= MAX_TOKENS_LIMIT, `a positive integer up to ${MAX_TOKENS_LIMIT}`);
  const maxB = num(body, 'max_tokens', (x) => Number.isInteger(x) && x >= 1 && x <= MAX_TOKENS_LIMIT, `a positive integer up to ${MAX_TOKENS_LIMIT}`);
  const temperature = num(body, 'temperature', (x) => x >= 0 && x <= 2, 'a number from 0 to 2');
  const topP = num(body, 'top_p', (x) => x > 0 && x <= 1, 'a number in (0, 1]');
  const topK = num(body, 'top_k', (x) => Number.isInteger(x) && x >= -1 && x <= 2 ** 31, 'an integer from -1 to 2^31 (-1 or 0: off)');
  const seed = num(body, 'seed', Number.isSafeInteger, 'an integer');
  const stop = parseStop(body);
  if (body.logprobs !== undefined && body.logprobs !== null && typeof body.logprobs !== 'boolean') throw badRequest("'logprobs' must be a boolean", 'logprobs');
  const topLogprobs = num(body, 'top_logprobs', (x) => Number.isInteger(x) && x >= 0 && x <= 20, 'an integer from 0 to 20') ?? 0;
  if (topLogprobs > 0 && body.logprobs !== true) throw badRequest("'top_logprobs' needs 'logprobs': true", 'top_logprobs');
  if (body.stream_options !== undefined && body.stream_options !== null && !isObj(body.stream_options)) throw badRequest("'stream_options' must be an object", 'stream_options');
  if (body.chat_template_kwargs !== undefined && body.chat_template_kwargs !== null && !isObj(body.chat_template_kwargs)) throw badRequest("'chat_template_kwargs' must be an object", 'chat_template_kwargs');
  const templateKwargs: Record<string, unknown> = { ...(body.chat_template_kwargs as Record<string, unknown> | undefined) };
  if (typeof body.enable_thinking === 'boolean' && templateKwargs.enable_thinking === undefined) templateKwargs.enable_thinking = body.enable_thinking;
  return {
    model: body.model,
    messages: body.messages as WireMessage[],
    tools: (body.tools ?? undefined) as ChatRequest['tools'],
    n: n ?? 1,
    stream: body.stream === true,
    includeUsage: isObj(body.stream_options) && body.stream_options.include_usage === true,
    maxTokens: maxA ?? maxB,
    temperature, topP, topK: topK !== undefined && topK > 0 ? topK : undefined, stop, seed,
    logprobs: body.logprobs === true, topLogprobs, templateKwargs, raw: body,
  };
}
