// Where judge answers come from. `llm`: any OpenAI-compatible endpoint (a local vLLM, Ollama or
// llama.cpp server) through the `openai` SDK's client, which does the timeout and the retries with
// exponential backoff on 429/5xx/timeouts/network errors; a cap on requests in flight here. `self`: the served model itself through the engine,
// with adapters off (the frozen base) and at low priority, so serving keeps its latency.
import type { Engine, SampleParams } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import type OpenAI from 'openai';
import { COMPACT_CONTEXT_LIMIT, type PromptStyle } from './prompts.ts';

export interface ChatBackend {
  readonly name: string;
  /** the prompt set this backend's model can read (default 'full') */
  readonly promptStyle?: PromptStyle;
  complete(messages: { role: string; content: string }[], p: { temperature: number; maxTokens: number }): Promise<string>;
}

/** A judge backend failure that is worth retrying later (outage, overload, timeout). */
export class BackendUnavailable extends Error { override name = 'BackendUnavailable'; }

/** Limits concurrent async work; waiters are served in arrival order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  readonly limit: number;
  constructor(limit: number) { this.limit = Math.max(1, limit); }
  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try { return await f(); } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export interface LlmBackendOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** per request */
  timeoutMs?: number;
  /** retries after the first attempt */
  retries?: number;
  maxConcurrent?: number;
  fetch?: typeof fetch;
}

export class LlmBackend implements ChatBackend {
  readonly name = 'llm';
  private readonly options: LlmBackendOptions;
  private readonly o: { baseUrl: string; model: string; timeoutMs: number };
  private readonly gate: Semaphore;
  /** the SDK, loaded on first use (it is large, and most commands never judge) */
  private sdk: Promise<typeof import('openai')> | null = null;
  private client: OpenAI | null = null;

  constructor(o: LlmBackendOptions) {
    this.options = o;
    this.o = { baseUrl: o.baseUrl.replace(/\/+$/, ''), model: o.model, timeoutMs: o.timeoutMs ?? 60_000 };
    this.gate = new Semaphore(o.maxConcurrent ?? 4);
  }

  complete(messages: { role: string; content: string }[], p: { temperature: number; maxTokens: number }): Promise<string> {
    return this.gate.run(() => this.ask(messages, p));
  }

  private async ask(messages: { role: string; content: string }[], p: { temperature: number; maxTokens: number }): Promise<string> {
    const sdk = await (this.sdk ??= import('openai'));
    const { APIError, APIConnectionError, APIConnectionTimeoutError } = sdk;
    // the SDK's client does the timeouts and the retries (exponential backoff with jitter, Retry-After honoured)
    // of 408/409/429/5xx answers, timeouts and network errors
    this.client ??= new sdk.default({
      baseURL: this.o.baseUrl, apiKey: this.options.apiKey ?? 'none', timeout: this.o.timeoutMs, maxRetries: this.options.retries ?? 3,
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
    });
    let body;
    try {
      body = await this.client.chat.completions.create({
        model: this.o.model, messages: messages as OpenAI.Chat.ChatCompletionMessageParam[], temperature: p.temperature, max_tokens: p.maxTokens, stream: false,
      });
    } catch (e) {
      // worth retrying later (the loop defers the turn): outages, overload, timeouts; anything else is a failure
      if (e instanceof APIConnectionTimeoutError) throw new BackendUnavailable(`judge endpoint timed out after ${this.o.timeoutMs} ms`);
      if (e instanceof APIConnectionError) throw new BackendUnavailable(`cannot reach the judge at ${this.o.baseUrl} (${(e.cause as Error | undefined)?.message ?? e.message})`);
      if (e instanceof APIError && e.status !== undefined && (e.status === 429 || e.status >= 500)) throw new BackendUnavailable(`judge endpoint answered ${e.status}`);
      if (e instanceof APIError && e.status !== undefined) throw new Error(`judge endpoint answered ${e.status}: ${e.message.slice(0, 300)}`);
      throw e;
    }
    const text = body.choices?.[0]?.message?.content;
    if (typeof text !== 'string') throw new Error('judge endpoint returned no message content');
    return text;
  }
}

export class SelfBackend implements ChatBackend {
  readonly name = 'self';
  /** compact prompts for small-context models (stories260k-chat was taught exactly those) */
  readonly promptStyle: PromptStyle;
  private readonly engine: Engine;
  constructor(engine: Engine, promptStyle?: PromptStyle) {
    this.engine = engine;
    this.promptStyle = promptStyle ?? (engine.info.contextLength <= COMPACT_CONTEXT_LIMIT ? 'compact' : 'full');
  }

  /**
   * A prompt longer than the model's context (minus room for the answer) is cut from the front,
   * keeping its first token (BOS or the chat opening) and its end, where the answer, the next state
   * and the final instruction are. A model that small is a weak judge; prefer `llm` or `lexical`.
   */
  async complete(messages: { role: string; content: string }[], p: { temperature: number; maxTokens: number }): Promise<string> {
    let ids = this.engine.tokenizer.encodeChat(messages.map((m) => ({ role: m.role as 'user', content: m.content })));
    const ctx = this.engine.info.contextLength;
    const answerRoom = Math.min(p.maxTokens, Math.floor(ctx / 4));
    if (ids.length > ctx - answerRoom) ids = [ids[0], ...ids.slice(ids.length - (ctx - answerRoom - 1))];
    const params: SampleParams = { maxTokens: Math.min(p.maxTokens, ctx - ids.length), temperature: p.temperature, topP: 1, topK: 0, weights: 'base', priority: 'low' };
    return (await collect(this.engine.sample(ids, params))).text;
  }
}
