// `openclaw-rl status`: what a running server reports at GET /admin/status.
import { parseArgs } from 'node:util';
import { UsageError } from './args.ts';

export async function statusCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: { url: { type: 'string' }, 'api-key': { type: 'string' }, json: { type: 'boolean', default: false } } });
  const base = (o.url ?? `http://${process.env.HOST ?? '127.0.0.1'}:${process.env.PORT ?? '30000'}`).replace(/\/v1\/?$/, '').replace(/\/+$/, '');
  const key = o['api-key'] ?? process.env.OPENCLAW_RL_API_KEY ?? process.env.SGLANG_API_KEY;
  let r: Response;
  try {
    r = await fetch(`${base}/admin/status`, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    throw new UsageError(`no server answered at ${base} (${(e as Error).message}); start one with openclaw-rl serve, or pass --url`);
  }
  const body = await r.json() as Record<string, unknown>;
  if (!r.ok) throw new Error(`${base}/admin/status answered ${r.status}: ${JSON.stringify(body)}`);
  if (o.json) { process.stdout.write(JSON.stringify(body) + '\n'); return; }
  const t = body.trainer as { method: string; step: number; samples: Record<string, number> } | null;
  process.stdout.write([
    `model ${body.model}, policy version ${body.policyVersion}, ${body.requestsInFlight} request(s) in flight, ${body.openSessions} open session(s)`,
    `sessions by how they were identified: ${JSON.stringify(body.sessionSources ?? {})}`,
    `turns by type: ${JSON.stringify(body.turnTypes ?? {})}`,
    `judge: ${body.judge}; learning: ${t ? `${t.method}, step ${t.step}, samples ${JSON.stringify(t.samples)}` : 'off'}`,
  ].join('\n') + '\n');
}
