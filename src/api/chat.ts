// POST /v1/chat/completions: validate, render the prompt with the model's chat template, pair the
// session's previous main turn with its next state, stream tokens as the engine produces them, and
// record the turn token-exactly (prompt ids, sampled ids, their log-probs, the weights version).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Engine, SampleParams, SampledToken, SampleResult } from '../engine/types.ts';
import { EngineError } from '../engine/types.ts';
import type { ChatMessage } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import type { SessionTracker } from '../conversation/tracker.ts';
import { resolveSession, classifyTurn, sessionDone, type Headers } from '../conversation/identity.ts';
import { pairNextState, type OurAnswer } from '../conversation/next-state.ts';
import { contentText, type WireMessage } from '../conversation/messages.ts';
import { ApiError, badRequest, ClientGone } from './errors.ts';
import { validateChatRequest, type ChatRequest } from './validate.ts';
import { OutputParser, type OutputFormat, type ParsedToolCall, type Delta } from './output.ts';
import type { Metrics } from './metrics.ts';
import { parseToolChoice, constraintFor } from './tool-choice.ts';
import type { Admission } from './admission.ts';

/**
 * No tokenizer turns more than this many characters into one token (byte-level BPE vocabularies
 * top out far below it), so a prompt longer than context × this is refused before it is tokenized:
 * a multi-megabyte prompt costs a length check, not seconds of tokenization.
 */
export const MAX_CHARS_PER_TOKEN = 256;

/** Characters the template will render: every message's text and tool-call arguments, and the tools. */
function promptChars(r: ChatRequest): number {
  let n = r.tools ? JSON.stringify(r.tools).length : 0;
  for (const m of r.messages) {
    n += m.content === null || m.content === undefined ? 0 : contentText(m.content).length;
    n += typeof m.reasoning_content === 'string' ? m.reasoning_content.length : 0;
    for (const tc of m.tool_calls ?? []) n += String(tc.function?.arguments ?? '').length + String(tc.function?.name ?? '').length;
  }
  return n;
}

export interface ChatContext {
  engine: Engine;
  modelId: string;
  store: Store;
  tracker: SessionTracker;
  metrics: Metrics;
  format: OutputFormat;
  maxConcurrent: number;
  /** the admission queue in front of the engine (see admission.ts) */
  admission: Admission;
  defaultMaxTokens: number;
  /**
   * 'error' (default): a prompt longer than the context is refused. 'truncate': keep its first token
   * and its last tokens, leaving room for the answer (for small models behind long agent prompts).
   * Either way the recorded prompt ids are exactly the ones the model saw.
   */
  contextOverflow: 'error' | 'truncate';
}

/** Wire messages → the tokenizer's chat messages (developer → system, content parts → text). */
function toChatMessages(messages: WireMessage[]): ChatMessage[] {
  return messages.map((m) => ({
    role: (m.role === 'developer' ? 'system' : m.role) as ChatMessage['role'],
    content: m.content === null || m.content === undefined ? '' : contentText(m.content),
    ...(m.tool_calls ? { tool_calls: m.tool_calls.map((tc) => ({ id: tc.id, type: 'function' as const, function: { name: tc.function!.name!, arguments: (tc.function!.arguments ?? '{}') as string } })) } : {}),
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
    ...(typeof m.reasoning_content === 'string' ? { reasoning_content: m.reasoning_content } : {}),
  }));
}

function promptIdsFor(ctx: ChatContext, r: ChatRequest): number[] {
  try {
    return ctx.engine.tokenizer.encodeChat(toChatMessages(r.messages), { tools: r.tools as never, templateKwargs: r.templateKwargs });
  } catch (e) {
    throw badRequest(`the chat template could not render these messages: ${(e as Error).message}`, 'messages');
  }
}

/** Pair the session's previous main turn with what this request says came after its answer. */
function recordNextState(store: Store, sessionId: string, messages: WireMessage[]): void {
  const prev = store.lastMainTurn(sessionId);
  if (!prev || prev.next_state_status !== 'pending' || !prev.answer_json) return;
  const previous = JSON.parse(prev.request_json) as { messages: WireMessage[] };
  const answer = JSON.parse(prev.answer_json) as OurAnswer;
  const p = pairNextState(previous.messages, answer, messages);
  if (p.status === 'paired') store.setNextState(prev.id, 'paired', { role: p.role, messages: p.nextState }, null);
  else store.setNextState(prev.id, 'unpaired', null, p.reason);
}

export async function handleChat(ctx: ChatContext, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  const t0 = performance.now();
  const r = validateChatRequest(body);
  if (r.model !== ctx.modelId) throw new ApiError(404, `the model '${r.model}' does not exist: this server serves '${ctx.modelId}'`, { param: 'model', code: 'model_not_found' });
  const contextLength = ctx.engine.info.contextLength;
  const chars = promptChars(r);
  if (chars > contextLength * MAX_CHARS_PER_TOKEN) {
    throw badRequest(`this model's maximum context length is ${contextLength} tokens, but the messages hold ${chars} characters (more than ${MAX_CHARS_PER_TOKEN} per token)`, 'messages', 'context_length_exceeded');
  }
  let promptIds = promptIdsFor(ctx, r);
  if (promptIds.length >= contextLength && ctx.contextOverflow === 'truncate') {
    const keep = contextLength - Math.min(r.maxTokens ?? ctx.defaultMaxTokens, Math.floor(contextLength / 4)) - 1;
    promptIds = [promptIds[0], ...promptIds.slice(promptIds.length - keep)];
  }
  if (promptIds.length >= contextLength) {
    throw badRequest(`this model's maximum context length is ${contextLength} tokens, but the messages are ${promptIds.length} tokens`, 'messages', 'context_length_exceeded');
  }
  const headers = req.headers as Headers;
  const session = resolveSession(headers, r.raw as never);
  const turnType = classifyTurn(headers, r.raw as never);
  const done = sessionDone(headers, r.raw as never);
  const maxTokens = Math.min(r.maxTokens ?? ctx.defaultMaxTokens, contextLength - promptIds.length);
  const constraint = constraintFor(parseToolChoice(r.raw, r.tools), r.tools, ctx.format, maxTokens);
  const params: SampleParams = {
    maxTokens, ...(constraint ? { constraint } : {}),
    temperature: r.temperature ?? 1, topP: r.topP ?? 1, topK: r.topK ?? 0, seed: r.seed, stop: r.stop,
    topLogprobs: r.logprobs ? Math.max(r.topLogprobs, 0) : 0,
  };

  const { store, tracker, metrics } = ctx;
  if (!(await ctx.admission.acquire())) {
    throw new ApiError(429, `too many requests: ${ctx.admission.limit} in flight and ${ctx.admission.waiting} waiting (a request waits at most ${ctx.admission.waitMs / 1000} s); retry shortly`, { code: 'rate_limit_exceeded' });
  }
  if (res.destroyed || req.socket.destroyed) { ctx.admission.release(); throw new ClientGone(); } // it left while waiting
  const abort = new AbortController();
  // hand the prompt to the engine thread first; the bookkeeping below overlaps with its compute
  const events = ctx.engine.sample(promptIds, params, abort.signal)[Symbol.asyncIterator]();
  const firstEvent = events.next();
  const start = {
    sessionId: session.id, idSource: session.source, turnType: turnType.type, typeSource: turnType.source,
    request: { messages: r.messages, tools: r.tools ?? null, params, templateKwargs: r.templateKwargs }, promptIds, policyVersion: -1,
  };
  let turnId: number;
  try {
    if (turnType.type === 'main') recordNextState(store, session.id, r.messages);
    tracker.touch(session.id);
    turnId = store.beginTurn(start);
  } catch (e) {
    abort.abort();
    await events.return?.();
    ctx.admission.release();
    throw e;
  }

  metrics.active++;
  res.on('close', () => { if (!res.writableFinished) abort.abort(); });
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const parser = new OutputParser(ctx.format);
  const logprobs: object[] = [];
  let firstTokenMs: number | undefined;
  let result: SampleResult | null = null;
  let toolCalls: ParsedToolCall[] = [];
  const chunk = (delta: object, finish: string | null = null, lp: object[] | null = null, extra: object = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: ctx.modelId, ...extra, choices: [{ index: 0, delta, logprobs: lp ? { content: lp } : null, finish_reason: finish }] })}\n\n`;
  const tokenEntry = (tokenId: number, logprob: number) => {
    const token = ctx.engine.tokenizer.decode([tokenId], false);
    // JSON has no NaN or -Infinity (they would go out as null): OpenAI's floor for "impossible" is -9999
    return { token, logprob: Number.isFinite(logprob) ? Math.max(logprob, -9999) : -9999, bytes: [...Buffer.from(token)] };
  };
  const tokenLogprob = (t: SampledToken) => ({ ...tokenEntry(t.id, t.logprob), top_logprobs: (t.top ?? []).map((a) => tokenEntry(a.id, a.logprob)) });
  const deltaObject = (d: Delta) => ({ ...(d.reasoning ? { reasoning_content: d.reasoning } : {}), ...(d.content ? { content: d.content } : {}) });
  // the turn is committed before the client gets the end of the answer, so an acknowledged turn
  // is always in the store
  let recorded: Parameters<Store['finishTurn']>[1] | null = null;
  const record = (status: 'complete' | 'aborted' | 'error') => {
    if (recorded) return;
    recorded = {
      status, responseIds: result?.ids ?? [], responseLogprobs: result?.logprobs ?? [], responseText: result?.text ?? '',
      answer: { content: parser.content, reasoning: parser.reasoning || null, toolCalls },
      finishReason: result?.finishReason ?? 'error', policyVersion: result?.policyVersion ?? -1,
      firstTokenMs, totalMs: performance.now() - t0,
    };
    store.finishTurn(turnId, recorded, start, false); // logged once the response is out
    metrics.turns[status === 'aborted' ? 'aborted' : turnType.type]++;
  };

  try {
    if (r.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      res.write(chunk({ role: 'assistant', content: '' }));
    }
    for (let next = await firstEvent; !next.done; next = await events.next()) {
      const ev = next.value;
      if (ev.type === 'done') { result = ev.result; break; }
      firstTokenMs ??= performance.now() - t0;
      const d = parser.push(ev.token.text);
      const lp = r.logprobs ? [tokenLogprob(ev.token)] : null;
      if (lp) logprobs.push(...lp);
      if (r.stream && (d.content || d.reasoning || lp)) res.write(chunk(deltaObject(d), null, lp));
    }
    const end = parser.finish();
    toolCalls = end.toolCalls;
    if (!result || result.finishReason === 'abort') return; // the client went away: recorded as aborted below
    const finishReason = toolCalls.length > 0 ? 'tool_calls' : result.finishReason;
    const usage = { prompt_tokens: promptIds.length, completion_tokens: result.ids.length, total_tokens: promptIds.length + result.ids.length };
    const wireCalls = toolCalls.map((c, index) => ({ index, id: `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    record('complete');
    if (r.stream) {
      if (end.delta.content || end.delta.reasoning) res.write(chunk(deltaObject(end.delta)));
      if (wireCalls.length > 0) res.write(chunk({ tool_calls: wireCalls }));
      // the weights version that wrote this answer rides on the last chunk (an extension field)
      res.write(chunk({}, finishReason, null, { policy_version: result.policyVersion }));
      if (r.includeUsage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: ctx.modelId, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
    } else {
      const message = {
        role: 'assistant', content: toolCalls.length > 0 && !parser.content ? null : parser.content,
        ...(parser.reasoning ? { reasoning_content: parser.reasoning } : {}),
        ...(wireCalls.length > 0 ? { tool_calls: wireCalls.map(({ index: _index, ...c }) => c) } : {}),
      };
      const payload = { id, object: 'chat.completion', created, model: ctx.modelId, choices: [{ index: 0, message, logprobs: r.logprobs ? { content: logprobs } : null, finish_reason: finishReason }], usage, policy_version: result.policyVersion };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    }
    metrics.policyVersion = Math.max(metrics.policyVersion, result.policyVersion);
    metrics.promptTokens += promptIds.length;
    metrics.completionTokens += result.ids.length;
  } catch (e) {
    if (!res.headersSent) throw e instanceof EngineError && e.code !== 'internal' ? badRequest(e.message, 'messages', e.code) : e;
    // mid-stream failure: tell the client in the stream's own format, then close
    const err = e instanceof ApiError ? e : new ApiError(500, (e as Error).message);
    if (!res.writableEnded) res.end(`data: ${JSON.stringify(err.toJSON())}\n\n`);
  } finally {
    metrics.active--;
    ctx.admission.release();
    record(result && result.finishReason !== 'abort' ? 'complete' : result ? 'aborted' : 'error');
    store.logTurn(turnId, recorded!, start);
    metrics.latency.observe(performance.now() - t0);
    if (firstTokenMs !== undefined) metrics.firstToken.observe(firstTokenMs);
    if (done) tracker.end(session.id, 'done');
  }
}
