// POST /v1/completions: the text-completion endpoint that vLLM/SGLang-style clients and eval tools call. The
// prompt is text (tokenized as `generate --prompt` does) or token ids (used exactly); the answer streams like
// chat, with legacy-format log-probs, and `echo` prepends the prompt (its tokens' log-probs from scoring).
// Each request is recorded as a side turn, token-exactly: a raw prompt has no conversation whose next
// message could judge it, so it is kept, exported and shown, but not trained on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { SampleParams, SampledToken, SampleResult } from '../engine/types.ts';
import { EngineError } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import { resolveSession, type Headers } from '../conversation/identity.ts';
import { ApiError, badRequest, ClientGone } from './errors.ts';
import { MAX_CHARS_PER_TOKEN, type ChatContext } from './chat.ts';
import { isObj, num, parseStop } from './validate.ts';

export interface CompletionRequest {
  model: string;
  /** the prompt as given: text, or token ids */
  prompt: string | number[];
  stream: boolean;
  includeUsage: boolean;
  maxTokens: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop: string[];
  seed?: number;
  /** null: no log-probs; n ≥ 0: the chosen token's and the n likeliest */
  logprobs: number | null;
  echo: boolean;
  raw: Record<string, unknown>;
}

const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isInteger(x));

export function validateCompletionRequest(body: unknown, vocabSize: number): CompletionRequest {
  if (!isObj(body)) throw badRequest('the request body must be a JSON object');
  if (typeof body.model !== 'string' || !body.model) throw badRequest("'model' is required and must be a string", 'model');
  let prompt = body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && (typeof prompt[0] === 'string' || isIds(prompt[0]))) prompt = prompt[0];
  if (Array.isArray(prompt) && prompt.length > 1 && prompt.every((p) => typeof p === 'string' || isIds(p))) {
    throw badRequest("'prompt' holds several prompts: this server completes one prompt per request", 'prompt');
  }
  if (typeof prompt !== 'string' && !isIds(prompt)) throw badRequest("'prompt' is required: a string, or an array of token ids", 'prompt');
  if (isIds(prompt)) {
    if (prompt.length === 0) throw badRequest("'prompt' must hold at least one token id", 'prompt');
    const bad = prompt.find((id) => id < 0 || id >= vocabSize);
    if (bad !== undefined) throw badRequest(`token id ${bad} in 'prompt' is outside the vocabulary (0..${vocabSize - 1})`, 'prompt');
  }
  for (const [key, ok] of [['n', 1], ['best_of', 1]] as const) {
    const v = num(body, key, Number.isInteger, 'an integer');
    if (v !== undefined && v !== ok) throw badRequest(`'${key}' must be 1: this server returns one choice per request (got ${v})`, key);
  }
  if (body.suffix !== undefined && body.suffix !== null && body.suffix !== '') throw badRequest("'suffix' (fill in the middle) is not supported", 'suffix');
  for (const key of ['stream', 'echo'] as const) {
    if (body[key] !== undefined && body[key] !== null && typeof body[key] !== 'boolean') throw badRequest(`'${key}' must be a boolean`, key);
  }
  if (body.stream_options !== undefined && body.stream_options !== null && !isObj(body.stream_options)) throw badRequest("'stream_options' must be an object", 'stream_options');
  const stop = parseStop(body);
  const topK = num(body, 'top_k', (x) => Number.isInteger(x) && x >= -1, 'an integer ≥ -1 (-1 or 0: off)');
  return {
    model: body.model, prompt, stream: body.stream === true, echo: body.echo === true,
    includeUsage: isObj(body.stream_options) && body.stream_options.include_usage === true,
    // 16 is the OpenAI default for this endpoint
    maxTokens: num(body, 'max_tokens', (x) => Number.isInteger(x) && x >= 1, 'a positive integer') ?? 16,
    temperature: num(body, 'temperature', (x) => x >= 0 && x <= 2, 'a number from 0 to 2'),
    topP: num(body, 'top_p', (x) => x > 0 && x <= 1, 'a number in (0, 1]'),
    topK: topK !== undefined && topK > 0 ? topK : undefined,
    seed: num(body, 'seed', Number.isSafeInteger, 'an integer'),
    logprobs: num(body, 'logprobs', (x) => Number.isInteger(x) && x >= 0 && x <= 20, 'an integer from 0 to 20') ?? null,
    stop, raw: body,
  };
}

/** Log-probs in the completions format: parallel arrays, top alternatives as {token: logprob}. */
interface LegacyLogprobs { tokens: string[]; token_logprobs: (number | null)[]; top_logprobs: (Record<string, number> | null)[]; text_offset: number[] }

export async function handleCompletion(ctx: ChatContext, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  const t0 = performance.now();
  const { engine, store, tracker, metrics } = ctx;
  const r = validateCompletionRequest(body, engine.info.vocabSize);
  if (r.model !== ctx.modelId) throw new ApiError(404, `the model '${r.model}' does not exist: this server serves '${ctx.modelId}'`, { param: 'model', code: 'model_not_found' });
  const tok = engine.tokenizer;
  const contextLength = engine.info.contextLength;
  // a cheap length check before tokenizing (see chat.ts)
  if (typeof r.prompt === 'string' && r.prompt.length > contextLength * MAX_CHARS_PER_TOKEN) {
    throw badRequest(`this model's maximum context length is ${contextLength} tokens, but the prompt holds ${r.prompt.length} characters`, 'prompt', 'context_length_exceeded');
  }
  const promptIds = typeof r.prompt === 'string' ? tok.encode(r.prompt) : r.prompt;
  if (promptIds.length >= contextLength) {
    throw badRequest(`this model's maximum context length is ${contextLength} tokens, but the prompt is ${promptIds.length} tokens`, 'prompt', 'context_length_exceeded');
  }
  const params: SampleParams = {
    maxTokens: Math.min(r.maxTokens, contextLength - promptIds.length), temperature: r.temperature ?? 1, topP: r.topP ?? 1, topK: r.topK ?? 0,
    seed: r.seed, stop: r.stop, topLogprobs: r.logprobs ?? 0,
  };
  // the prompt's own log-probs, for echo: scored before sampling starts (teacher forcing; the first has none)
  let promptLogprobs: number[] | null = null;
  if (r.echo && r.logprobs !== null && promptIds.length > 1) {
    try {
      const [lp] = await engine.score([{ promptIds: promptIds.slice(0, 1), responseIds: promptIds.slice(1) }], { temperature: 1 });
      promptLogprobs = Array.from(lp);
    } catch (e) {
      throw e instanceof EngineError && e.code !== 'internal' ? badRequest(e.message, 'prompt', e.code) : e;
    }
  }
  const session = resolveSession(req.headers as Headers, r.raw as never);
  if (!(await ctx.admission.acquire())) {
    throw new ApiError(429, `too many requests: ${ctx.admission.limit} in flight and ${ctx.admission.waiting} waiting; retry shortly`, { code: 'rate_limit_exceeded' });
  }
  if (res.destroyed || req.socket.destroyed) { ctx.admission.release(); throw new ClientGone(); }
  const abort = new AbortController();
  const events = engine.sample(promptIds, params, abort.signal)[Symbol.asyncIterator]();
  const firstEvent = events.next();
  const start = {
    sessionId: session.id, idSource: session.source, turnType: 'side' as const, typeSource: 'default',
    request: { endpoint: 'completions', prompt: r.prompt, params }, promptIds, policyVersion: -1,
  };
  let turnId: number;
  try {
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

  const id = `cmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  // a token's text as it reads after other text (decoded behind an anchor token, so a leading space survives)
  const anchor = tok.encode('a', false).slice(-1);
  const anchorText = tok.decode(anchor, true);
  const pieceOf = (tokenId: number) => tok.decode([...anchor, tokenId], true).slice(anchorText.length);
  const echoText = r.echo ? (typeof r.prompt === 'string' ? r.prompt : tok.decode(promptIds, false)) : '';
  let offset = 0;
  const legacy = (entries: { id: number; text?: string; logprob: number | null; top?: { id: number; logprob: number }[] }[]): LegacyLogprobs => {
    const out: LegacyLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    for (const e of entries) {
      const piece = e.text ?? pieceOf(e.id);
      out.tokens.push(piece);
      out.token_logprobs.push(e.logprob);
      out.top_logprobs.push(e.logprob === null ? null : Object.fromEntries((e.top ?? []).map((a) => [pieceOf(a.id), a.logprob])));
      out.text_offset.push(offset);
      offset += piece.length;
    }
    return out;
  };
  const echoLogprobs = () => legacy(promptIds.map((pid, i) => ({ id: pid, logprob: i === 0 || !promptLogprobs ? null : promptLogprobs[i - 1] })));
  // a sampled token's text is what it added to the answer, so the tokens join to the text
  const tokenLogprobs = (t: SampledToken) => legacy([{ id: t.id, text: t.text, logprob: t.logprob, top: t.top }]);
  const chunk = (text: string, lp: LegacyLogprobs | null, finish: string | null, extra: object = {}) =>
    `data: ${JSON.stringify({ id, object: 'text_completion', created, model: ctx.modelId, ...extra, choices: [{ index: 0, text, logprobs: lp, finish_reason: finish }] })}\n\n`;

  let result: SampleResult | null = null;
  let firstTokenMs: number | undefined;
  let text = '';
  const all: LegacyLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  const append = (lp: LegacyLogprobs) => { for (const k of Object.keys(all) as (keyof LegacyLogprobs)[]) (all[k] as unknown[]).push(...lp[k]); };
  let recorded: Parameters<Store['finishTurn']>[1] | null = null;
  const record = (status: 'complete' | 'aborted' | 'error') => {
    if (recorded) return;
    recorded = {
      status, responseIds: result?.ids ?? [], responseLogprobs: result?.logprobs ?? [], responseText: result?.text ?? '',
      answer: { content: text, reasoning: null, toolCalls: [] }, finishReason: result?.finishReason ?? 'error',
      policyVersion: result?.policyVersion ?? -1, firstTokenMs, totalMs: performance.now() - t0,
    };
    store.finishTurn(turnId, recorded, start, false);
    metrics.turns[status === 'aborted' ? 'aborted' : 'side']++;
  };
  try {
    if (r.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      if (r.echo) res.write(chunk(echoText, r.logprobs !== null ? echoLogprobs() : null, null));
    } else if (r.echo && r.logprobs !== null) append(echoLogprobs());
    for (let next = await firstEvent; !next.done; next = await events.next()) {
      const ev = next.value;
      if (ev.type === 'done') { result = ev.result; break; }
      firstTokenMs ??= performance.now() - t0;
      text += ev.token.text;
      const lp = r.logprobs !== null ? tokenLogprobs(ev.token) : null;
      if (r.stream) { if (ev.token.text || lp) res.write(chunk(ev.token.text, lp, null)); } else if (lp) append(lp);
    }
    if (!result || result.finishReason === 'abort') return;
    record('complete');
    const usage = { prompt_tokens: promptIds.length, completion_tokens: result.ids.length, total_tokens: promptIds.length + result.ids.length };
    if (r.stream) {
      res.write(chunk('', null, result.finishReason, { policy_version: result.policyVersion }));
      if (r.includeUsage) res.write(`data: ${JSON.stringify({ id, object: 'text_completion', created, model: ctx.modelId, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
    } else {
      const choice = { index: 0, text: echoText + text, logprobs: r.logprobs !== null ? all : null, finish_reason: result.finishReason };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, object: 'text_completion', created, model: ctx.modelId, choices: [choice], usage, policy_version: result.policyVersion }));
    }
    metrics.policyVersion = Math.max(metrics.policyVersion, result.policyVersion);
    metrics.promptTokens += promptIds.length;
    metrics.completionTokens += result.ids.length;
  } catch (e) {
    if (!res.headersSent) throw e instanceof EngineError && e.code !== 'internal' ? badRequest(e.message, 'prompt', e.code) : e;
    const err = e instanceof ApiError ? e : new ApiError(500, (e as Error).message);
    if (!res.writableEnded) res.end(`data: ${JSON.stringify(err.toJSON())}\n\n`);
  } finally {
    metrics.active--;
    ctx.admission.release();
    record(result && result.finishReason !== 'abort' ? 'complete' : result ? 'aborted' : 'error');
    store.logTurn(turnId, recorded!, start);
    metrics.latency.observe(performance.now() - t0);
    if (firstTokenMs !== undefined) metrics.firstToken.observe(firstTokenMs);
  }
}
