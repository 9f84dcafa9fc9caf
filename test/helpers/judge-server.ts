// TEST DOUBLE for an external judge endpoint (an OpenAI-compatible server such as vLLM or Ollama):
// it answers POST /v1/chat/completions with scripted judge texts, and can be slow, fail with 500,
// or be down, while it records what it received and how many requests were in flight.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Behaviour = { text: string; delayMs?: number } | { status: number; delayMs?: number };

export interface ScriptedJudge {
  url: string;
  received: { messages: { role: string; content: string }[]; temperature: number }[];
  maxInFlight: number;
  /** requests being answered right now */
  inFlight(): number;
  /** decides each answer; default: a positive vote with a hint */
  script: (req: { messages: { role: string; content: string }[] }, n: number) => Behaviour;
  close(): Promise<void>;
}

export async function startScriptedJudge(): Promise<ScriptedJudge> {
  let inFlight = 0, n = 0;
  const sj: ScriptedJudge = {
    url: '', received: [], maxInFlight: 0, inFlight: () => inFlight,
    script: () => ({ text: 'The user moved on.\n\\boxed{1}\n[HINT_START]The user likes dogs.[HINT_END]' }),
    close: () => new Promise((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', async () => {
      inFlight++;
      sj.maxInFlight = Math.max(sj.maxInFlight, inFlight);
      const body = JSON.parse(Buffer.concat(parts).toString());
      sj.received.push(body);
      const b = sj.script(body, n++);
      if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
      inFlight--;
      if (res.destroyed) return;
      if ('status' in b) res.writeHead(b.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'scripted failure' } }));
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: b.text }, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  sj.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return sj;
}
