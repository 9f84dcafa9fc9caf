// Where judge answers come from. `llm`: any OpenAI-compatible endpoint (a local vLLM, Ollama or
// llama.cpp server), with a timeout, retries with exponential backoff on 429/5xx/timeouts/network
// errors, and a cap on requests in flight. `self`: the served model itself through the engine,
// with adapters off (the frozen base) and at low priority, so serving keeps its latency.
import type { Engine, SampleParams } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
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
  timeoutMs?: number;
  retries?: number;
  backoffMs?: number;
  maxConcurrent?: number;
  fetch?: typeof fetch;
}

export class LlmBackend implements ChatBackend {
  readonly name = 'llm';
  private readonly o: Required<Omit<LlmBackendOptions, 'apiKey'>> & { apiKey?: string };
  private readonly gate: Semaphore;

  constructor(o: LlmBackendOptions) {
    this.o = { timeoutMs: 60_000, retries: 3, backoffMs: 500, maxConcurrent: 4, fetch: globalThis.fetch, ...o, baseUrl: o.baseUrl.replace(/\/+$/, '') };
    this.gate = new Semaphore(this.o.maxConcurrent);
  }

  complete(messages: { role: string; content: string }[], p: { temperature: number; maxTokens: number }): Promise<string> {
    return this.gate.run(() => this.withRetries(messages, p));
  }

  private async withRetries(messages: { role: string; content: string }[], p: { temperature: number; maxTokens: number }): Promise<string> {
    let last: Error = new BackendUnavailable('no attempt made');
    for (let attempt = 0; attempt <= this.o.retries; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, this.o.backoffMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5)));
      try {
        const r = await this.o.fetch(`${this.o.baseUrl}/chat/completions`, {
          method: 'POST', signal: AbortSignal.timeout(this.o.timeoutMs),
          headers: { 'content-type': 'application/json', ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}) },
          body: JSON.stringify({ model: this.o.model, messages, temperature: p.temperature, max_tokens: p.maxTokens, stream: false }),
        });
        if (r.status === 429 || r.status >= 500) { last = new BackendUnavailable(`judge endpoint answered ${r.status}`); await r.body?.cancel(); continue; }
        if (!r.ok) throw new Error(`judge endpoint answered ${r.status}: ${(await r.text()).slice(0, 300)}`);
        const body = await r.json() as { choices?: { message?: { content?: string | null } }[] };
        const text = body.choices?.[0]?.message?.content;
        if (typeof text !== 'string') throw new Error('judge endpoint returned no message content');
        return text;
      } catch (e) {
        const err = e as Error;
        if (err.name === 'TimeoutError' || err.name === 'AbortError' || err.name === 'TypeError' || err instanceof BackendUnavailable) {
          last = new BackendUnavailable(err.name === 'TimeoutError' ? `judge endpoint timed out after ${this.o.timeoutMs} ms` : err.message);
          continue;
        }
        throw err;
      }
    }
    throw last;
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
