// SGLang as a serving backend, over its native /generate: `input_ids` in, sampled ids with their
// log-probs out (`return_logprob`, meta_info.output_token_logprobs as [logprob, id, text] triples),
// streamed; scoring by input log-probs from `logprob_start_len` with max_new_tokens 0; LoRA adapters
// loaded and unloaded by name (/load_lora_adapter, /unload_lora_adapter: the server needs
// --enable-lora) and chosen per request with `lora_path`.
import type { SampleParams } from '../types.ts';
import { postJson, sseEvents, BackendError, type ServingBackend, type BackendEvent } from '../serving.ts';

export interface SglangOptions { baseUrl: string; apiKey?: string; baseModel?: string; fetch?: typeof fetch }

type Triple = [number | null, number, string | null];
interface GenerateAnswer {
  meta_info?: {
    output_token_logprobs?: Triple[]; input_token_logprobs?: Triple[];
    output_top_logprobs?: (Triple[] | null)[]; completion_tokens?: number; finish_reason?: { type?: string } | null;
  };
}

export class SglangBackend implements ServingBackend {
  readonly name = 'sglang';
  readonly baseModel: string;
  private readonly o: SglangOptions;
  private readonly fetchFn: typeof fetch;

  private constructor(o: SglangOptions, baseModel: string) { this.o = o; this.baseModel = baseModel; this.fetchFn = o.fetch ?? fetch; }

  static async connect(o: SglangOptions): Promise<SglangBackend> {
    const url = o.baseUrl.replace(/\/+$/, '');
    let baseModel = o.baseModel;
    if (!baseModel) {
      const r = await (o.fetch ?? fetch)(`${url}/get_model_info`, { headers: o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {} });
      if (!r.ok) throw new BackendError(r.status, `GET ${url}/get_model_info: HTTP ${r.status}`);
      baseModel = String(((await r.json()) as { model_path?: string }).model_path ?? 'default');
    }
    return new SglangBackend({ ...o, baseUrl: url }, baseModel);
  }

  private headers(): Record<string, string> { return this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}; }

  async *generate(promptIds: number[], params: SampleParams, adapter: string | null, signal?: AbortSignal): AsyncGenerator<BackendEvent> {
    const body = {
      input_ids: promptIds,
      sampling_params: {
        max_new_tokens: params.maxTokens, temperature: params.temperature, top_p: params.topP, top_k: params.topK > 0 ? params.topK : -1,
        ...(params.stop?.length ? { stop: params.stop } : {}), ...(params.stopTokenIds?.length ? { stop_token_ids: params.stopTokenIds } : {}),
        ...(params.seed !== undefined ? { sampling_seed: params.seed } : {}),
        ignore_eos: params.ignoreEos ?? false, skip_special_tokens: false, no_stop_trim: true,
      },
      return_logprob: true, logprob_start_len: -1, top_logprobs_num: params.topLogprobs ?? 0, stream: true,
      ...(adapter ? { lora_path: adapter } : {}),
    };
    const res = await postJson(this.fetchFn, `${this.o.baseUrl}/generate`, body, this.headers(), signal);
    let seen = 0;
    for await (const chunk of sseEvents(res)) {
      const m = (chunk as GenerateAnswer).meta_info;
      const list = m?.output_token_logprobs ?? [];
      // chunks carry either every token so far or only the new ones: completion_tokens tells which
      const cumulative = m?.completion_tokens === undefined ? list.length > seen : list.length === m.completion_tokens;
      const fresh = cumulative ? list.slice(seen) : list;
      const tops = m?.output_top_logprobs ?? [];
      for (let k = 0; k < fresh.length; k++) {
        const [lp, id] = fresh[k];
        const topRow = params.topLogprobs ? (cumulative ? tops[seen + k] : tops[k]) : null;
        yield { type: 'token', id, logprob: lp ?? NaN, ...(topRow ? { top: topRow.map(([l, t]) => ({ id: t, logprob: l ?? NaN })) } : {}) };
      }
      seen += fresh.length;
      const f = m?.finish_reason?.type;
      if (f) yield { type: 'finish', reason: f === 'length' ? 'length' : f === 'abort' ? 'abort' : 'stop' };
    }
  }

  async promptLogprobs(ids: number[], from: number, adapter: string | null): Promise<number[]> {
    const res = await postJson(this.fetchFn, `${this.o.baseUrl}/generate`, {
      input_ids: ids, sampling_params: { max_new_tokens: 0, temperature: 0 }, return_logprob: true, logprob_start_len: from,
      ...(adapter ? { lora_path: adapter } : {}),
    }, this.headers());
    const list = ((await res.json()) as GenerateAnswer).meta_info?.input_token_logprobs ?? [];
    // one triple per input position from logprob_start_len on
    const rows = list.slice(list.length - (ids.length - from));
    if (rows.length !== ids.length - from) throw new BackendError(502, `SGLang returned ${list.length} input log-probs for ${ids.length - from} tokens`);
    return rows.map(([lp, id], k) => {
      if (id !== ids[from + k] || lp === null) throw new BackendError(502, `SGLang's input log-prob at position ${from + k} is for token ${id}, expected ${ids[from + k]}`);
      return lp;
    });
  }

  async loadAdapter(name: string, dir: string): Promise<void> {
    const res = await postJson(this.fetchFn, `${this.o.baseUrl}/load_lora_adapter`, { lora_name: name, lora_path: dir, pinned: false }, this.headers());
    const r = await res.json() as { success?: boolean; error_message?: string | null };
    if (r.success === false) throw new BackendError(400, `SGLang could not load ${name}: ${r.error_message ?? 'no reason given'}`);
  }

  async unloadAdapter(name: string): Promise<void> {
    const res = await postJson(this.fetchFn, `${this.o.baseUrl}/unload_lora_adapter`, { lora_name: name }, this.headers());
    const r = await res.json() as { success?: boolean; error_message?: string | null };
    if (r.success === false) throw new BackendError(400, `SGLang could not unload ${name}: ${r.error_message ?? 'no reason given'}`);
  }
}
