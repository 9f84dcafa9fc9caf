// `openclaw-rl report`: the curves of a data folder's metrics.jsonl as SVG charts (through the
// project's plot helper), one per quantity, with the held-out evaluations on the reward chart.
import type { Series } from '../bench/plot.ts';
import { lineChartSvg } from '../bench/plot.ts';
import type { MetricsLine } from './metrics-log.ts';

type StepLine = Extract<MetricsLine, { event: 'step' }>;

export interface Chart { name: string; title: string; svg: string; points: number }

const QUANTITIES: { name: string; title: string; key: keyof StepLine }[] = [
  { name: 'reward', title: 'Reward mean per step', key: 'rewardMean' },
  { name: 'loss', title: 'Loss per step', key: 'loss' },
  { name: 'kl', title: 'KL to the base model', key: 'kl' },
  { name: 'clip-fraction', title: 'Clip fraction', key: 'clipFraction' },
  { name: 'teacher-gap', title: 'Teacher − behaviour gap', key: 'teacherGap' },
];

/** Nice bounds around the values (a little margin; equal values get a unit band). */
function bounds(ys: number[]): { yMin: number; yMax: number } {
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
  const pad = (hi - lo) * 0.08;
  return { yMin: lo - pad, yMax: hi + pad };
}

const format = (span: number) => (y: number) => (span < 0.05 ? y.toFixed(4) : span < 5 ? y.toFixed(2) : y.toFixed(0));

/**
 * One chart per quantity that has data. x is the count of published updates so far, so a rollback
 * (which repeats step numbers) does not fold the curve back on itself.
 */
export function renderReport(lines: MetricsLine[]): Chart[] {
  const series = new Map<string, { x: number; y: number }[]>(QUANTITIES.map((q) => [q.name, []]));
  const judge: { x: number; y: number }[] = [], rule: { x: number; y: number }[] = [];
  let x = 0;
  for (const l of lines) {
    if (l.event === 'step' && l.status === 'published') {
      x++;
      for (const q of QUANTITIES) { const v = l[q.key]; if (typeof v === 'number' && Number.isFinite(v)) series.get(q.name)!.push({ x, y: v }); }
    } else if (l.event === 'eval') {
      if (l.judgeScoreMean !== null) judge.push({ x, y: l.judgeScoreMean });
      if (l.ruleSatisfaction !== null) rule.push({ x, y: l.ruleSatisfaction });
    }
  }
  const charts: Chart[] = [];
  for (const q of QUANTITIES) {
    const pts = series.get(q.name)!;
    const s: Series[] = pts.length ? [{ label: q.title.split(' per ')[0], points: pts }] : [];
    if (q.name === 'reward') {
      if (judge.length) s.push({ label: 'held-out judge score', points: judge });
      if (rule.length) s.push({ label: 'held-out rule rate', points: rule });
    }
    if (!s.length) continue;
    const b = bounds(s.flatMap((x) => x.points.map((p) => p.y)));
    charts.push({ name: q.name, title: q.title, points: pts.length, svg: lineChartSvg(s, { title: q.title, xLabel: 'published updates', yLabel: q.title.split(' per ')[0], ...b, yFormat: format(b.yMax - b.yMin) }) });
  }
  return charts;
}
