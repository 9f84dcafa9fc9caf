// How CLI commands reach a running server: --url (or HOST/PORT), --api-key (or the server's key
// variables), and errors that say what to do.
import { UsageError } from './command.ts';

export interface ServerTarget { base: string; key: string | undefined }

export function serverTarget(o: { url?: string; 'api-key'?: string }): ServerTarget {
  const base = (o.url ?? `http://${process.env.HOST ?? '127.0.0.1'}:${process.env.PORT ?? '30000'}`).replace(/\/v1\/?$/, '').replace(/\/+$/, '');
  return { base, key: o['api-key'] ?? process.env.OPENCLAW_RL_API_KEY ?? process.env.SGLANG_API_KEY };
}

/** A JSON request to the server; a non-2xx answer becomes an Error with the server's message. */
export async function serverJson<T>(t: ServerTarget, path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  let r: Response;
  try {
    r = await fetch(`${t.base}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...(t.key ? { authorization: `Bearer ${t.key}` } : {}), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined, signal: AbortSignal.timeout(60_000),
    });
  } catch (e) {
    throw new UsageError(`no server answered at ${t.base} (${(e as Error).message}); start one with openclaw-rl serve, or pass --url`);
  }
  const text = await r.text();
  let body: unknown;
  try { body = JSON.parse(text); } catch { body = text; }
  if (!r.ok) {
    const msg = (body as { error?: { message?: string } })?.error?.message ?? text;
    throw new Error(`${t.base}${path} answered ${r.status}: ${msg}`);
  }
  return body as T;
}
