// Is an OpenAI-compatible judge endpoint there? Asked once when serve starts, so an unreachable LLM judge
// is reported at once (a warning and the status), not only when the first turn waits for it.

/** null when `baseUrl` answers GET /models (any status below 500: a 401 still means it is there), else why not. */
export async function probeJudge(baseUrl: string, apiKey: string | undefined, timeoutMs = 5000): Promise<string | null> {
  try {
    const r = await fetch(`${baseUrl.replace(/\/+$/, '')}/models`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
    await r.body?.cancel();
    return r.status >= 500 ? `GET ${baseUrl}/models answered ${r.status}` : null;
  } catch (e) {
    const err = e as Error & { cause?: Error };
    return err.name === 'TimeoutError' ? `no answer from ${baseUrl} within ${timeoutMs / 1000} s` : `${baseUrl}: ${err.cause?.message ?? err.message}`;
  }
}
