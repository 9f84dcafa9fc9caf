// Supervised fine-tuning data: chat records read from JSON Lines and turned into the exact token ids
// a model sees, with a loss mask that is 1 only on what the assistant produced.
//
// The ids are those of the whole conversation rendered by the model's chat template (or the
// plain-text fallback of template-less models). An assistant message's span starts where the
// template's generation prompt for it ends (the conversation before it, rendered with
// add_generation_prompt) and ends with the first end-of-turn token after that: exactly the tokens the
// model would have generated, stop token included. Every rendered prefix must tokenize to a prefix of
// the whole; a template (or tokenizer) for which that fails is refused, never guessed around.
import { readFileSync } from 'node:fs';
import type { ChatMessage, ChatTokenizer, ToolSpec } from '../engine/embedded/tokenizer.ts';

export interface ChatExample { messages: ChatMessage[]; tools?: ToolSpec[] }

/** Token ids of one training sequence and, per id, 1 where the loss applies (assistant output); a recipe may raise some to weigh those tokens more (runSft). */
export interface EncodedExample { ids: number[]; mask: number[] }

/** One record of a JSONL file: a chat to render, or a served turn whose exact ids are known. */
export type SftRecord =
  | { line: number; kind: 'chat'; example: ChatExample }
  | { line: number; kind: 'ids'; promptIds: number[]; responseIds: number[] };

export class SftDataError extends Error { override name = 'SftDataError'; }

export interface EncodeOptions {
  /** ids that end an assistant turn (default: the tokenizer's eos token) */
  stopIds?: number[];
  /** extra chat-template variables, e.g. {enable_thinking: false} */
  templateKwargs?: Record<string, unknown>;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

function isPrefix(a: number[], b: number[]): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The conversation's ids and its assistant-only loss mask. Throws SftDataError when the
 * conversation has no assistant message or the template renders it in a way whose assistant spans
 * cannot be located exactly.
 */
export function encodeChatExample(tokenizer: ChatTokenizer, example: ChatExample, opts: EncodeOptions = {}): EncodedExample {
  const { messages, tools } = example;
  const templated = tokenizer.chatTemplate !== null;
  const encode = (text: string) => (templated ? tokenizer.encode(text, false) : tokenizer.encode(text, true));
  const render = (upTo: number, generationPrompt: boolean) =>
    tokenizer.renderChat(messages.slice(0, upTo), { tools, addGenerationPrompt: generationPrompt, templateKwargs: opts.templateKwargs });
  const ids = encode(render(messages.length, false));
  const mask = new Array<number>(ids.length).fill(0);
  const eos = tokenizer.eosToken !== null ? tokenizer.tokenId(tokenizer.eosToken) : undefined;
  const stop = new Set(opts.stopIds ?? (eos !== undefined ? [eos] : []));
  let previousEnd = 0, assistants = 0;
  for (let i = 0; i < messages.length; i++) {
    if (messages[i].role !== 'assistant') continue;
    assistants++;
    const before = encode(render(i, true));
    if (!isPrefix(before, ids)) {
      throw new SftDataError(`the chat template is not prefix-stable: the conversation up to message ${i} (with the generation prompt) does not tokenize to a prefix of the whole conversation, so the tokens of assistant message ${i} cannot be located exactly`);
    }
    const start = before.length;
    if (start < previousEnd) throw new SftDataError(`assistant message ${i} starts inside the previous assistant message's tokens (the template is not prefix-stable)`);
    // where the next message starts, when the template renders this prefix stably
    let bound: number | null = ids.length;
    if (i + 1 < messages.length) {
      const through = encode(render(i + 1, false));
      bound = isPrefix(through, ids) ? through.length : null;
    }
    let end = -1;
    if (templated) {
      const limit = bound ?? ids.length;
      for (let t = start; t < limit; t++) if (stop.has(ids[t])) { end = t + 1; break; }
      if (end < 0) {
        if (bound === null) throw new SftDataError(`assistant message ${i} is not closed by an end-of-turn token (ids ${[...stop].join(', ')}) and the template does not render the conversation through it as a prefix of the whole, so its end cannot be located exactly`);
        end = bound;
      }
    } else {
      end = bound!;
    }
    for (let t = start; t < end; t++) mask[t] = 1;
    previousEnd = end;
  }
  if (assistants === 0) throw new SftDataError('the conversation has no assistant message to learn from');
  return { ids, mask };
}

// ---- reading records ----

function fail(line: number, msg: string): never { throw new SftDataError(`line ${line}: ${msg}`); }

function checkMessage(m: unknown, line: number, k: number): ChatMessage {
  const where = `messages[${k}]`;
  if (!m || typeof m !== 'object' || Array.isArray(m)) fail(line, `${where} must be an object with a role and content`);
  const msg = m as Record<string, unknown>;
  if (typeof msg.role !== 'string' || !ROLES.has(msg.role)) fail(line, `${where}.role must be one of ${[...ROLES].join(', ')} (got ${JSON.stringify(msg.role)})`);
  const c = msg.content;
  if (!(c === null || c === undefined || typeof c === 'string' || Array.isArray(c))) fail(line, `${where}.content must be a string, an array of content parts or null`);
  if (Array.isArray(c)) c.forEach((p, j) => { if (!p || typeof p !== 'object' || typeof (p as { type?: unknown }).type !== 'string') fail(line, `${where}.content[${j}] must be a content part with a type`); });
  if (msg.tool_calls !== undefined) {
    if (msg.role !== 'assistant') fail(line, `${where} has tool_calls but its role is ${msg.role} (only assistant messages call tools)`);
    if (!Array.isArray(msg.tool_calls)) fail(line, `${where}.tool_calls must be an array`);
    msg.tool_calls.forEach((tc, j) => {
      const fn = (tc as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
      if (!fn || typeof fn.name !== 'string' || fn.name === '') fail(line, `${where}.tool_calls[${j}].function.name must be a non-empty string`);
      if (fn.arguments !== undefined && typeof fn.arguments !== 'string' && (typeof fn.arguments !== 'object' || fn.arguments === null)) fail(line, `${where}.tool_calls[${j}].function.arguments must be a JSON string or an object`);
    });
  }
  if ((c === null || c === undefined) && msg.role !== 'assistant') fail(line, `${where} (${msg.role}) has no content`);
  return { ...msg, content: c ?? null } as unknown as ChatMessage;
}

function checkTools(tools: unknown, line: number): ToolSpec[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) fail(line, '"tools" must be an array of {"type": "function", "function": {...}}');
  tools.forEach((t, j) => {
    const fn = (t as { function?: { name?: unknown } } | null)?.function;
    if (!fn || typeof fn.name !== 'string') fail(line, `tools[${j}] must be {"type": "function", "function": {"name": ..., "parameters": ...}}`);
  });
  return tools as ToolSpec[];
}

function checkIds(v: unknown, line: number, field: string): number[] {
  if (!Array.isArray(v) || v.some((x) => !Number.isInteger(x) || x < 0)) fail(line, `"${field}" must be an array of token ids`);
  return v as number[];
}

/**
 * One JSON line: an OpenAI chat record {"messages": [...], "tools"?: [...]}, or a served turn as
 * `openclaw-rl export` writes it — with `--no-redact` its exact prompt and response ids are used;
 * a redacted export carries no ids, so its request's messages and tools plus the recorded answer are
 * rendered as a chat. Turns that did not complete return null. Throws SftDataError naming the line
 * and the problem.
 */
export function parseSftRecord(text: string, line: number): SftRecord | null {
  let v: unknown;
  try { v = JSON.parse(text); } catch (e) { fail(line, `not valid JSON (${(e as Error).message})`); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) fail(line, 'expected a JSON object such as {"messages": [...]}');
  const rec = v as Record<string, unknown>;
  if (rec.messages === undefined && rec.request !== undefined && (rec.responseIds !== undefined || rec.answer !== undefined)) {
    if (rec.status !== undefined && rec.status !== 'complete') return null;
    if (rec.responseIds !== undefined) {
      const promptIds = checkIds(rec.promptIds, line, 'promptIds'), responseIds = checkIds(rec.responseIds, line, 'responseIds');
      if (promptIds.length === 0 || responseIds.length === 0) fail(line, 'an exported turn needs prompt and response ids');
      return { line, kind: 'ids', promptIds, responseIds };
    }
    return exportedTurnAsChat(rec, line);
  }
  if (!Array.isArray(rec.messages)) fail(line, '"messages" is missing or not an array');
  if (rec.messages.length === 0) fail(line, '"messages" is empty');
  const messages = rec.messages.map((m, k) => checkMessage(m, line, k));
  if (!messages.some((m) => m.role === 'assistant')) fail(line, 'no assistant message (nothing to learn from)');
  return { line, kind: 'chat', example: { messages, tools: checkTools(rec.tools, line) } };
}

/** A redacted exported turn (no ids): the request's messages and tools, then the recorded answer. */
function exportedTurnAsChat(rec: Record<string, unknown>, line: number): SftRecord {
  const request = rec.request as { messages?: unknown; tools?: unknown } | null;
  if (!request || !Array.isArray(request.messages)) fail(line, 'an exported turn needs request.messages');
  const answer = rec.answer as { content?: unknown; reasoning?: unknown; toolCalls?: unknown } | null;
  if (!answer || typeof answer !== 'object') fail(line, 'an exported turn needs its answer');
  if (answer.content !== null && answer.content !== undefined && typeof answer.content !== 'string') fail(line, 'answer.content must be a string');
  const calls = Array.isArray(answer.toolCalls) ? answer.toolCalls as { name?: unknown; arguments?: unknown }[] : [];
  const assistant: Record<string, unknown> = { role: 'assistant', content: answer.content ?? '' };
  if (typeof answer.reasoning === 'string' && answer.reasoning !== '') assistant.reasoning_content = answer.reasoning;
  if (calls.length > 0) assistant.tool_calls = calls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments ?? '{}' } }));
  const messages = [...request.messages, assistant].map((m, k) => checkMessage(m, line, k));
  return { line, kind: 'chat', example: { messages, tools: checkTools(request.tools, line) } };
}

/** Every record of a JSONL file (blank lines skipped); the first malformed line throws. */
export function readSftFile(path: string): { records: SftRecord[]; skipped: number } {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch (e) { throw new SftDataError(`cannot read ${path}: ${(e as Error).message}`); }
  const records: SftRecord[] = [];
  let skipped = 0;
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    try {
      const r = parseSftRecord(raw, i + 1);
      if (r) records.push(r); else skipped++;
    } catch (e) {
      if (e instanceof SftDataError) throw new SftDataError(`${path}:${e.message.slice('line '.length)}`);
      throw e;
    }
  });
  if (records.length === 0) throw new SftDataError(`${path} holds no usable records`);
  return { records, skipped };
}

export interface EncodedRecord extends EncodedExample { line: number; truncated: boolean }

/**
 * Encode records for a model with `maxTokens` positions: longer sequences are cut to maxTokens + 1
 * ids (the last id is only predicted) when `truncate`, else refused. A record whose ids fall
 * outside the vocabulary, or that has no loss token left, throws naming its line.
 */
export function encodeRecords(tokenizer: ChatTokenizer, records: SftRecord[], opts: EncodeOptions & { maxTokens: number; vocabSize: number; truncate?: boolean }): EncodedRecord[] {
  return records.map((r) => {
    let enc: EncodedExample;
    try {
      enc = r.kind === 'chat' ? encodeChatExample(tokenizer, r.example, opts)
        : { ids: [...r.promptIds, ...r.responseIds], mask: [...r.promptIds.map(() => 0), ...r.responseIds.map(() => 1)] };
    } catch (e) {
      if (e instanceof SftDataError) fail(r.line, e.message);
      throw e;
    }
    const bad = enc.ids.find((id) => id >= opts.vocabSize);
    if (bad !== undefined) fail(r.line, `token id ${bad} is outside this model's vocabulary (0..${opts.vocabSize - 1})`);
    let truncated = false;
    if (enc.ids.length > opts.maxTokens + 1) {
      if (!opts.truncate) fail(r.line, `${enc.ids.length} tokens exceed the model's context of ${opts.maxTokens}`);
      enc = { ids: enc.ids.slice(0, opts.maxTokens + 1), mask: enc.mask.slice(0, opts.maxTokens + 1) };
      truncated = true;
    }
    if (!enc.mask.some((m, t) => m === 1 && t > 0)) fail(r.line, truncated ? `no assistant token is left within the model's context of ${opts.maxTokens}` : 'no assistant token to learn from');
    return { ...enc, line: r.line, truncated };
  });
}
