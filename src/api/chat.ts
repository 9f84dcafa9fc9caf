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
import { ApiError, badRequest, ClientGone, storageError } from './errors.ts';
import { validateChatRequest, type ChatRequest } from './validate.ts';
import { OutputParser, type OutputFormat, type ParsedToolCall, type Delta } from './output.ts';
import type { Metrics } from './metrics.ts';
import { parseToolChoice, constraintFor } from './tool-choice.ts';
import type { Admission } from './admission.ts';
import type { PromptTokenizer } from './tokenize-worker.ts';

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
  /** tokenizes long prompts off the event loop (see tokenize-worker.ts) */
  prompts: PromptTokenizer;
  defaultMaxTokens: number;
  /**
   * 'error' (default): a prompt longer than the context is refused. 'truncate': keep its first token
   * and its last tokens, leaving room for the answer (for small models behind long agent prompts).
   * Either way the recorded prompt ids are exactly the ones the model saw.
   */
  contextOverflow: 'error' | 'truncate';
  /**
   * Bounded off-policyness (trainer/pace.ts): a main turn waits here, before it takes an admission slot,
   * while the trainer is too far behind the judged traffic. Absent: never waits.
   */
  pace?: { wait(signal?: AbortSignal): Promise<number> };
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

async function promptIdsFor(ctx: ChatContext, r: ChatRequest, chars: number): Promise<number[]> {
  try {
    return await ctx.prompts.encodeChat(toChatMessages(r.messages), { tools: r.tools as never, templateKwargs: r.templateKwargs }, chars);
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
  // compared as stored: under --redact all both sides are redacted alike
  const p = pairNextState(previous.messages, answer, store.stored(messages));
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
  let promptIds = await promptIdsFor(ctx, r, chars);
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
  const constraint = constraintFor(parseToolChoice(r.raw, r.tools), r.tools, ctx.format, maxTokens, ctx.engine.tokenizer.chatTemplate);
  const params: SampleParams = {
    maxTokens, ...(constraint ? { constraint } : {}),
    temperature: r.temperature ?? 1, topP: r.topP ?? 1, topK: r.topK ?? 0, seed: r.seed, stop: r.stop,
    topLogprobs: r.logprobs ? Math.max(r.topLogprobs, 0) : 0,
  };

  const { store, tracker, metrics } = ctx;
  const n = r.n;
  // a request holds one admission slot whatever its n; n itself may not exceed the engine's limit
  if (n > ctx.admission.limit) throw new ApiError(429, `n = ${n} choices exceed the ${ctx.admission.limit} requests in flight this server allows; ask for fewer`, { code: 'rate_limit_exceeded' });
  // under the training pace, what this request says about the previous answer goes to the judge now, before the wait
  const pace = turnType.type === 'main' ? ctx.pace : undefined;
  const pairedEarly = pace !== undefined;
  if (pace) {
    recordNextState(store, session.id, r.messages);
    const left = new AbortController();
    const onClose = () => left.abort();
    req.socket.once('close', onClose);
    try { await pace.wait(left.signal); } finally { req.socket.off('close', onClose); }
  }
  if (!(await ctx.admission.acquire())) {
    throw new ApiError(429, `too many requests: ${ctx.admission.limit} in flight and ${ctx.admission.waiting} waiting (a request waits at most ${ctx.admission.waitMs / 1000} s); retry shortly`, { code: 'rate_limit_exceeded' });
  }
  if (res.destroyed || req.socket.destroyed) { ctx.admission.release(); throw new ClientGone(); } // it left while waiting
  const abort = new AbortController();
  // hand the prompt to the engine thread first (one sample per choice; with a seed, choice i uses
  // seed + i); the bookkeeping below overlaps with its compute
  const choices = Array.from({ length: n }, (_, index) => {
    const p: SampleParams = { ...params, seed: params.seed === undefined ? undefined : params.seed + index };
    const events = ctx.engine.sample(promptIds, p, abort.signal)[Symbol.asyncIterator]();
    return { index, params: p, events, firstEvent: events.next(), parser: new OutputParser(ctx.format), logprobs: [] as object[], result: null as SampleResult | null,
      toolCalls: [] as ParsedToolCall[], firstTokenMs: undefined as number | undefined, turnId: -1, recorded: null as Parameters<Store['finishTurn']>[1] | null,
      start: null as unknown as Parameters<Store['beginTurn']>[0] };
  });
  try {
    if (turnType.type === 'main' && !pairedEarly) recordNextState(store, session.id, r.messages);
    tracker.touch(session.id);
    // each choice is its own turn (the same prompt ids; `choice` says which of the n it was)
    for (const c of choices) {
      c.start = {
        sessionId: session.id, idSource: session.source, turnType: turnType.type, typeSource: turnType.source,
        request: { messages: r.messages, tools: r.tools ?? null, params: c.params, templateKwargs: r.templateKwargs, ...(n > 1 ? { choice: c.index, n } : {}) }, promptIds, policyVersion: -1,
      };
      c.turnId = store.beginTurn(c.start);
    }
  } catch (e) {
    abort.abort();
    await Promise.all(choices.map((c) => c.events.return?.()));
    ctx.admission.release();
    throw e;
  }

  metrics.active += n;
  res.on('close', () => { if (!res.writableFinished) abort.abort(); });
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (index: number, delta: object, finish: string | null = null, lp: object[] | null = null, extra: object = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: ctx.modelId, ...extra, choices: [{ index, delta, logprobs: lp ? { content: lp } : null, finish_reason: finish }] })}\n\n`;
  const tokenEntry = (tokenId: number, logprob: number) => {
    const token = ctx.engine.tokenizer.decode([tokenId], false);
    // JSON has no NaN or -Infinity (they would go out as null): OpenAI's floor for "impossible" is -9999
    return { token, logprob: Number.isFinite(logprob) ? Math.max(logprob, -9999) : -9999, bytes: [...Buffer.from(token)] };
  };
  const tokenLogprob = (t: SampledToken) => ({ ...tokenEntry(t.id, t.logprob), top_logprobs: (t.top ?? []).map((a) => tokenEntry(a.id, a.logprob)) });
  const deltaObject = (d: Delta) => ({ ...(d.reasoning ? { reasoning_content: d.reasoning } : {}), ...(d.content ? { content: d.content } : {}) });
  // a turn is committed before the client gets the end of its answer, so an acknowledged turn is
  // always in the store
  type Choice = (typeof choices)[number];
  const record = (c: Choice, status: 'complete' | 'aborted' | 'error') => {
    if (c.recorded) return;
    c.recorded = {
      status, responseIds: c.result?.ids ?? [], responseLogprobs: c.result?.logprobs ?? [], responseText: c.result?.text ?? '',
      answer: { content: c.parser.content, reasoning: c.parser.reasoning || null, toolCalls: c.toolCalls },
      finishReason: c.result?.finishReason ?? 'error', policyVersion: c.result?.policyVersion ?? -1,
      firstTokenMs: c.firstTokenMs, totalMs: performance.now() - t0,
    };
    store.finishTurn(c.turnId, c.recorded, c.start, false); // logged once the response is out
    metrics.turns[status === 'aborted' ? 'aborted' : turnType.type]++;
  };
  const wireCallsOf = (c: Choice) => c.toolCalls.map((tc, index) => ({ index, id: `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`, type: 'function', function: { name: tc.name, arguments: tc.arguments } }));

  /** Drain one choice's tokens (streaming its chunks); false when the client went away. */
  const runChoice = async (c: Choice): Promise<boolean> => {
    for (let next = await c.firstEvent; !next.done; next = await c.events.next()) {
      const ev = next.value;
      if (ev.type === 'done') { c.result = ev.result; break; }
      c.firstTokenMs ??= performance.now() - t0;
      const d = c.parser.push(ev.token.text);
      const lp = r.logprobs ? [tokenLogprob(ev.token)] : null;
      if (lp) c.logprobs.push(...lp);
      if (r.stream && (d.content || d.reasoning || lp)) res.write(chunk(c.index, deltaObject(d), null, lp));
    }
    const end = c.parser.finish();
    c.toolCalls = end.toolCalls;
    if (!c.result || c.result.finishReason === 'abort') return false; // the client went away: recorded as aborted below
    record(c, 'complete');
    if (r.stream) {
      if (end.delta.content || end.delta.reasoning) res.write(chunk(c.index, deltaObject(end.delta)));
      const wireCalls = wireCallsOf(c);
      if (wireCalls.length > 0) res.write(chunk(c.index, { tool_calls: wireCalls }));
      // the weights version that wrote this answer rides on its last chunk (an extension field)
      res.write(chunk(c.index, {}, c.toolCalls.length > 0 ? 'tool_calls' : c.result.finishReason, null, { policy_version: c.result.policyVersion }));
    }
    return true;
  };

  try {
    if (r.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      for (const c of choices) res.write(chunk(c.index, { role: 'assistant', content: '' }));
    }
    const finished = await Promise.all(choices.map(runChoice));
    if (!finished.every(Boolean)) return;
    const completion = choices.reduce((a, c) => a + c.result!.ids.length, 0);
    const usage = { prompt_tokens: promptIds.length, completion_tokens: completion, total_tokens: promptIds.length + completion };
    const version = Math.max(...choices.map((c) => c.result!.policyVersion));
    if (r.stream) {
      if (r.includeUsage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: ctx.modelId, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
    } else {
      const payloadChoices = choices.map((c) => {
        const wireCalls = wireCallsOf(c);
        const message = {
          role: 'assistant', content: c.toolCalls.length > 0 && !c.parser.content ? null : c.parser.content,
          ...(c.parser.reasoning ? { reasoning_content: c.parser.reasoning } : {}),
          ...(wireCalls.length > 0 ? { tool_calls: wireCalls.map(({ index: _index, ...tc }) => tc) } : {}),
        };
        return { index: c.index, message, logprobs: r.logprobs ? { content: c.logprobs } : null, finish_reason: c.toolCalls.length > 0 ? 'tool_calls' : c.result!.finishReason };
      });
      const payload = { id, object: 'chat.completion', created, model: ctx.modelId, choices: payloadChoices, usage, policy_version: version };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    }
    metrics.policyVersion = Math.max(metrics.policyVersion, version);
    metrics.promptTokens += promptIds.length * n;
    metrics.completionTokens += completion;
  } catch (e) {
    abort.abort();
    if (!res.headersSent) throw e instanceof EngineError && e.code !== 'internal' ? badRequest(e.message, 'messages', e.code) : e;
    // mid-stream failure: tell the client in the stream's own format, then close
    const err = e instanceof ApiError ? e : storageError(e) ?? new ApiError(500, (e as Error).message);
    if (!res.writableEnded) res.end(`data: ${JSON.stringify(err.toJSON())}\n\n`);
  } finally {
    metrics.active -= n;
    ctx.admission.release();
    for (const c of choices) {
      record(c, c.result && c.result.finishReason !== 'abort' ? 'complete' : c.result ? 'aborted' : 'error');
      store.logTurn(c.turnId, c.recorded!, c.start);
      if (c.firstTokenMs !== undefined) metrics.firstToken.observe(c.firstTokenMs);
    }
    metrics.latency.observe(performance.now() - t0);
    if (done) tracker.end(session.id, 'done');
  }
}
