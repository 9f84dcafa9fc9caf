// Prompt tokenization off the event loop. Rendering and tokenizing a long prompt takes CPU time in
// proportion to its length; done on the event loop, one multi-megabyte prompt stalls every other
// client. Prompts longer than INLINE_CHARS go to one worker thread holding its own copy of the
// tokenizer (loaded from the same model folder); short ones are tokenized inline, which is cheaper
// than the message round trip. The worker starts on first use and is unref'd (it never keeps the
// process alive).
import { Worker } from 'node:worker_threads';
import type { ChatMessage, RenderOptions, Tokenizer } from '../engine/types.ts';

/** Prompts up to this many characters are tokenized on the calling thread. */
export const INLINE_CHARS = 32_768;

const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

export class PromptTokenizer {
  private readonly tokenizer: Tokenizer;
  private readonly dir: string | null;
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (ids: number[]) => void; reject: (e: Error) => void }>();

  constructor(tokenizer: Tokenizer) {
    this.tokenizer = tokenizer;
    const dir = (tokenizer as { dir?: unknown }).dir;
    this.dir = typeof dir === 'string' ? dir : null;
  }

  /** Prompt ids for `messages`; `chars` is the caller's estimate of the rendered length. */
  encodeChat(messages: ChatMessage[], opts: RenderOptions, chars: number): Promise<number[]> {
    if (chars <= INLINE_CHARS || !this.dir) return Promise.resolve(this.tokenizer.encodeChat(messages, opts));
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref(); // alive while a job is pending
      worker.postMessage({ id, messages, opts });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL(`./tokenize-thread${EXT}`, import.meta.url), { workerData: { dir: this.dir } });
    worker.unref();
    worker.on('message', (m: { id: number; ids?: number[]; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) worker.unref();
      if (m.ids) p.resolve(m.ids); else p.reject(new Error(m.error ?? 'tokenization failed'));
    });
    const fail = (e: Error) => {
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
      this.worker = null;
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error('the tokenizer thread stopped')));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
