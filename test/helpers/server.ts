// An in-process server on a free loopback port, backed by the real stories260K engine and a
// temporary store.
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { Store } from '../../src/store/store.ts';
import { startServer, type RunningServer, type ServerOptions } from '../../src/api/server.ts';
import { STORIES, tempDir } from './models.ts';

export interface TestServer { server: RunningServer; engine: EmbeddedEngine; store: Store; dataDir: string; url: string; close(): Promise<void> }

export async function startTestServer(opts: Partial<ServerOptions> = {}): Promise<TestServer> {
  const engine = await EmbeddedEngine.load(STORIES);
  const t = tempDir('ocrl-server-');
  const store = new Store(t.dir);
  const server = await startServer({ engine, store, modelId: 'stories', port: 0, ...opts });
  return {
    server, engine, store, dataDir: t.dir, url: server.url,
    close: async () => { await server.close(); await engine.close(); store.close(); t.cleanup(); },
  };
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; text: string }> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  let json: any = null;
  try { json = JSON.parse(text); } catch { /* SSE or empty */ }
  return { status: r.status, json, text };
}
