// `openclaw-rl status`: what a running server reports at GET /admin/status.
import { defineCommand, opt } from './command.ts';
import { sparkline } from '../dashboard/sparkline.ts';
import type { PaceStatus } from '../trainer/pace.ts';
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
  const rate = (x: number | null) => (x === null ? '–' : `${(x * 100).toFixed(0)}%`);
  if (steps.length) {
    const first = steps[Math.max(0, steps.length - 40)];
    out.push(`curve over steps ${first.step}–${last(steps).step}:`,
      `  reward mean ${sparkline(steps.map((s) => s.rewardMean))}  last ${fmt(last(steps).rewardMean, 2)}`,
      `  loss        ${sparkline(steps.map((s) => s.loss))}  last ${fmt(last(steps).loss)}`);
    if (steps.some((s) => s.kl !== null)) out.push(`  KL to base  ${sparkline(steps.map((s) => s.kl))}  last ${fmt(last(steps).kl, 4)}`);
  }
  if (evals.length) {
    const e = last(evals);
    out.push(`  held-out    ${sparkline(evals.map((l) => l.judgeScoreMean ?? l.ruleSatisfaction))}  last: judge ${rate(e.judgeSatisfaction)}, rule ${rate(e.ruleSatisfaction)} at step ${e.step}`);
  }
  return out;
}

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
      `judge: ${body.judge}${judgeProblem(body.judgeHealth)}; learning: ${t ? `${t.method}, step ${t.step}, samples ${JSON.stringify(t.samples)}` : 'off'}`,
      ...(body.pace ? [paceLine(body.pace)] : []),
      ...(await curveLines(base, key)),
    ].join('\n') + '\n');
  },
});

/** The training pace (serve's --max-lag): turns waiting now, and those that waited so far. */
function paceLine(p: unknown): string {
  const x = p as PaceStatus;
  return `training pace: turns wait while more than ${x.maxLagBatches} full batch(es) wait for the trainer (the one in training included); ${x.standingAside ? 'standing aside (a backlog the trainer could not clear in time; turns are answered at once)' : `${x.waiting} turn(s) waiting now`}; ` +
    `${x.heldTurns} waited so far (${x.heldSeconds} s in all, longest ${x.maxHeldSeconds} s${x.timedOut ? `, ${x.timedOut} reached the limit` : ''})${x.passedTurns ? `, ${x.passedTurns} answered at once while it stood aside` : ''}`;
}

/** ' (N failed calls; last: …)' while the judge fails, else ''. */
function judgeProblem(h: unknown): string {
  const j = h as { failures?: number; lastError?: string | null } | null | undefined;
  return j?.lastError ? ` (${j.failures} failed call(s); last: ${j.lastError})` : '';
}
