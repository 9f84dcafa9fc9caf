// `openclaw-rl status`: what a running server reports at GET /admin/status.
import { defineCommand, opt } from './command.ts';

export const statusCommand = defineCommand({
  name: 'status',
  summary: 'show what a running server is doing (model, policy version, sessions, judge, learning)',
  options: {
    url: opt.string('the server', { defaultText: 'http://$HOST:$PORT, else http://127.0.0.1:30000', placeholder: 'URL', nonEmpty: true }),
    'api-key': opt.string("the server's API key", { env: ['OPENCLAW_RL_API_KEY', 'SGLANG_API_KEY'], placeholder: 'KEY' }),
    json: opt.flag('print the raw status object'),
  },
  run: async (o) => {
    const base = (o.url ?? `http://${process.env.HOST ?? '127.0.0.1'}:${process.env.PORT ?? '30000'}`).replace(/\/v1\/?$/, '').replace(/\/+$/, '');
    const key = o['api-key'];
    let r: Response;
    try {
      r = await fetch(`${base}/admin/status`, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(10_000) });
    } catch (e) {
      throw new Error(`no server answered at ${base} (${(e as Error).message}); start one with openclaw-rl serve, or pass --url`);
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
  },
});
