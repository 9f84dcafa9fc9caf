// vLLM as a serving backend, over its OpenAI-compatible server: /v1/completions with the prompt as
// token ids, `return_token_ids` (and token ids spelled "token_id:N" in the log-probs) so the sampled
// ids are exact, streamed; prompt log-probs for scoring; runtime LoRA loading
// (/v1/load_lora_adapter, /v1/unload_lora_adapter: the server needs --enable-lora and
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True). Log-probs are those of the distribution sampled from only
// when vLLM runs with --logprobs-mode processed_logprobs (docs/gpu.md).
import type { SampleParams } from '../types.ts';
import { postJson, sseEvents, BackendError, type ServingBackend, type BackendEvent } from '../serving.ts';

export interface VllmOptions { baseUrl: string; apiKey?: string; baseModel?: string; fetch?: typeof fetch }

interface CompletionChoice {
  token_ids?: number[];
  logprobs?: { tokens?: string[]; token_logprobs?: (number | null)[]; top_logprobs?: (Record<string, number> | null)[] } | null;
  prompt_logprobs?: (Record<string, { logprob: number }> | null)[] | null;
  finish_reason?: string | null;
}

/** "token_id:1234" (return_tokens_as_token_ids) → 1234 */
function idOf(token: string): number {
  const m = /^token_id:(\d+)$/.exec(token);
  if (!m) throw new BackendError(502, `vLLM spelled a token as '${token}': start it with return_tokens_as_token_ids support (vLLM ≥ 0.6)`);
  return Number(m[1]);
}

export class VllmBackend implements ServingBackend {
  readonly name = 'vllm';
  readonly baseModel: string;
  private readonly o: VllmOptions;
  private readonly fetchFn: typeof fetch;

  private constructor(o: VllmOptions, baseModel: string) { this.o = o; this.baseModel = baseModel; this.fetchFn = o.fetch ?? fetch; }

  static async connect(o: VllmOptions): Promise<VllmBackend> {
    const url = o.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    let baseModel = o.baseModel;
    if (!baseModel) {
      const r = await (o.fetch ?? fetch)(`${url}/v1/models`, { headers: o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {} });
      if (!r.ok) throw new BackendError(r.status, `GET ${url}/v1/models: HTTP ${r.status}`);
      const models = ((await r.json()) as { data?: { id: string; parent?: string | null }[] }).data ?? [];
      const bases = models.filter((m) => !m.parent);
      if (bases.length !== 1) throw new BackendError(400, `the vLLM server serves ${bases.length} base models (${bases.map((m) => m.id).join(', ')}): name one with --serving-model`);
      baseModel = bases[0].id;
    }
    return new VllmBackend({ ...o, baseUrl: url }, baseModel);
  }

  private headers(): Record<string, string> { return this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}; }

  async *generate(promptIds: number[], params: SampleParams, adapter: string | null, signal?: AbortSignal): AsyncGenerator<BackendEvent> {
    const body = {
      model: adapter ?? this.baseModel, prompt: promptIds, max_tokens: params.maxTokens, temperature: params.temperature,
      top_p: params.topP, top_k: params.topK > 0 ? params.topK : -1, ...(params.seed !== undefined ? { seed: params.seed } : {}),
      ...(params.stop?.length ? { stop: params.stop } : {}), ...(params.stopTokenIds?.length ? { stop_token_ids: params.stopTokenIds } : {}),
      ignore_eos: params.ignoreEos ?? false, logprobs: Math.max(1, params.topLogprobs ?? 0), return_token_ids: true, return_tokens_as_token_ids: true,
      skip_special_tokens: false, stream: true,
    };
    const res = await postJson(this.fetchFn, `${this.o.baseUrl}/v1/completions`, body, this.headers(), signal);
    for await (const chunk of sseEvents(res)) {
      const c = (chunk as { choices?: CompletionChoice[] }).choices?.[0];
      if (!c) continue;
      const lps = c.logprobs?.token_logprobs ?? [];
      const ids = c.token_ids ?? (c.logprobs?.tokens ?? []).map(idOf);
      if (ids.length !== lps.length) throw new BackendError(502, `vLLM sent ${ids.length} token ids with ${lps.length} log-probs`);
      for (let i = 0; i < ids.length; i++) {
        const top = params.topLogprobs ? Object.entries(c.logprobs?.top_logprobs?.[i] ?? {}).map(([t, lp]) => ({ id: idOf(t), logprob: lp })).slice(0, params.topLogprobs) : undefined;
        yield { type: 'token', id: ids[i], logprob: lps[i] ?? NaN, ...(top ? { top } : {}) };
      }
      if (c.finish_reason) yield { type: 'finish', reason: c.finish_reason === 'length' ? 'length' : c.finish_reason === 'abort' ? 'abort' : 'stop' };
    }
  }

  async promptLogprobs(ids: number[], from: number, adapter: string | null): Promise<number[]> {
    const res = await postJson(this.fetchFn, `${this.o.baseUrl}/v1/completions`, {
      model: adapter ?? this.baseModel, prompt: ids, max_tokens: 1, temperature: 0, prompt_logprobs: 1, return_token_ids: true,
    }, this.headers());
    const c = ((await res.json()) as { choices?: CompletionChoice[] }).choices?.[0];
    const rows = c?.prompt_logprobs;
    if (!rows || rows.length !== ids.length) throw new BackendError(502, `vLLM returned ${rows?.length ?? 0} prompt log-probs for ${ids.length} tokens`);
    return ids.slice(from).map((id, k) => {
      const entry = rows[from + k]?.[String(id)];
      if (!entry) throw new BackendError(502, `vLLM returned no prompt log-prob for token ${id} at position ${from + k}`);
      return entry.logprob;
    });
  }

  async loadAdapter(name: string, dir: string): Promise<void> {
    await postJson(this.fetchFn, `${this.o.baseUrl}/v1/load_lora_adapter`, { lora_name: name, lora_path: dir }, this.headers());
  }

  async unloadAdapter(name: string): Promise<void> {
    await postJson(this.fetchFn, `${this.o.baseUrl}/v1/unload_lora_adapter`, { lora_name: name }, this.headers());
  }
}
