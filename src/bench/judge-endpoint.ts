// A STAND-IN for a remote LLM judge, for benchmarks: an OpenAI-compatible endpoint
// (POST /v1/chat/completions, the wire format the `llm` judge backend speaks) whose verdicts come
// from the lexical judge applied to the next state in the judge prompt. It lets `bench load` put the
// server's real `llm` judge path (HTTP client, retries, outage handling) under load and take it down
// on purpose: while `down` it answers 503, as an overloaded or restarting model server does.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lexicalScore, lexicalHint } from '../judge/lexical.ts';

export interface JudgeEndpoint {
  /** base URL, ending in /v1 */
  url: string;
  /** answer 503 to everything while true */
  down: boolean;
  /** requests answered with a verdict, and refused while down */
  answered: number;
  refused: number;
  close(): Promise<void>;
}

/** The next state's text out of a judge prompt (full or compact form). */
export function nextStateOf(prompt: string): string {
  const full = /## Next state \(role: \w+\)\n([\s\S]*?)(?:\n\((?:This tool)|\n\n(?:First say|Decide)|$)/.exec(prompt);
  if (full) return full[1];
  const compact = /(?:^|\n)Next \([^)]*\): ([\s\S]*)$/.exec(prompt);
  return compact ? compact[1] : prompt;
}

export async function startJudgeEndpoint(): Promise<JudgeEndpoint> {
  const ep: JudgeEndpoint = { url: '', down: false, answered: 0, refused: 0, close: () => new Promise((r) => server.close(() => r())) };
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      if (ep.down) {
        ep.refused++;
        res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'judge model is restarting', type: 'server_error' } }));
        return;
      }
      let text: string;
      try {
        const body = JSON.parse(Buffer.concat(parts).toString()) as { messages: { role: string; content: string }[] };
        const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
        const state = nextStateOf(body.messages.at(-1)?.content ?? '');
        if (/HINT_START/.test(system)) {
          const hint = lexicalHint(state);
          text = hint ? `\\boxed{1}\n[HINT_START]${hint}[HINT_END]` : '\\boxed{-1}';
        } else {
          text = `\\boxed{${lexicalScore(state)}}`;
        }
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'malformed body', type: 'invalid_request_error' } }));
        return;
      }
      ep.answered++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        id: `judge-${ep.answered}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: 'lexical-stand-in',
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  ep.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return ep;
}
