// `openclaw-rl status`: what a running server reports at GET /admin/status.
import { parseArgs } from 'node:util';
import { UsageError } from './args.ts';
import { sparkline } from '../dashboard/sparkline.ts';
import type { MetricsLine } from '../dashboard/metrics-log.ts';

/** The learning curve in the terminal: the last 40 steps' reward mean and loss, and held-out evaluations. */
async function curveLines(base: string, key: string | undefined): Promise<string[]> {
  const r = await fetch(`${base}/admin/dashboard/live?after=0`, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(10_000) }).catch(() => null);
  if (!r?.ok) return [];
  const { metrics } = await r.json() as { metrics: { lines: MetricsLine[] } };
  const steps = metrics.lines.filter((l) => l.event === 'step' && l.status === 'published') as Extract<MetricsLine, { event: 'step' }>[];
  const evals = metrics.lines.filter((l) => l.event === 'eval') as Extract<MetricsLine, { event: 'eval' }>[];
  const out: string[] = [];
  const last = <T>(xs: T[]) => xs[xs.length - 1];
  const fmt = (x: number | null | undefined, d = 3) => (x === null || x === undefined ? '–' : x.toFixed(d));
  if (steps.length) {
    const first = steps[Math.max(0, steps.length - 40)];
    out.push(`curve over steps ${first.step}–${last(steps).step}:`,
      `  reward mean ${sparkline(steps.map((s) => s.rewardMean))}  last ${fmt(last(steps).rewardMean, 2)}`,
      `  loss        ${sparkline(steps.map((s) => s.loss))}  last ${fmt(last(steps).loss)}`);
    if (steps.some((s) => s.kl !== null)) out.push(`  KL to base  ${sparkline(steps.map((s) => s.kl))}  last ${fmt(last(steps).kl, 4)}`);
  }
  if (evals.length) {
    const e = last(evals);
    const v = (l: typeof e) => l.judgeScoreMean ?? l.ruleSatisfaction;
    out.push(`  held-out    ${sparkline(evals.map(v))}  last: judge ${e.judgeSatisfaction === null ? '–' : `${(e.judgeSatisfaction * 100).toFixed(0)}%`}, rule ${e.ruleSatisfaction === null ? '–' : `${(e.ruleSatisfaction * 100).toFixed(0)}%`} at step ${e.step}`);
  }
  return out;
}

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
    ...(await curveLines(base, key)),
  ].join('\n') + '\n');
}
