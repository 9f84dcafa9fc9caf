// `openclaw-rl report --data-dir DIR --out DIR [--png]`: the learning curves of a data folder as SVG
// files (and PNG through the project's plot helper), plus an index.html that shows them together.
import { resolve, join } from 'node:path';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { defineCommand, opt, UsageError } from './command.ts';

export const reportCommand = defineCommand({
  name: 'report',
  summary: "render a data folder's learning curves (metrics.jsonl) as SVG/PNG charts",
  description: 'Read <data-dir>/metrics.jsonl (written by serve: one line per training step, held-out evaluation and rollback) ' +
    'and write one chart per quantity (reward mean with the held-out evaluations, loss, KL to base, clip fraction, ' +
    'teacher–behaviour gap) as SVG, and PNG with --png, plus an index.html showing them together.',
  options: {
    'data-dir': opt.path('the data folder of serve', { default: '.openclaw-rl', env: 'OPENCLAW_RL_DATA_DIR', placeholder: 'DIR' }),
    out: opt.path('the folder the charts are written to', { placeholder: 'DIR' }),
    png: opt.flag('also write PNG files'),
  },
  check: (o) => { if (!o.out) throw new UsageError('--out DIR is required (the folder the charts are written to)'); },
  examples: ['openclaw-rl report --data-dir .openclaw-rl --out report/'],
  run: async (o) => {
    const dir = resolve(o['data-dir']);
    if (!existsSync(join(dir, 'metrics.jsonl'))) throw new UsageError(`no metrics.jsonl in ${dir}: serve writes it there from its first training step (pass --data-dir)`);
    const { readMetrics } = await import('../dashboard/metrics-log.ts');
    const { renderReport } = await import('../dashboard/report.ts');
    const lines = readMetrics(dir);
    const charts = renderReport(lines);
    if (!charts.length) throw new UsageError(`${join(dir, 'metrics.jsonl')} has no published steps or evaluations yet`);
    const out = resolve(o.out!);
    mkdirSync(out, { recursive: true });
    const { svgToPng } = o.png ? await import('../bench/plot.ts') : { svgToPng: null };
    for (const c of charts) {
      writeFileSync(join(out, `${c.name}.svg`), c.svg);
      if (svgToPng) await svgToPng(c.svg, join(out, `${c.name}.png`));
    }
    const steps = lines.filter((l) => l.event === 'step' && l.status === 'published').length;
    const evals = lines.filter((l) => l.event === 'eval').length;
    const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
    writeFileSync(join(out, 'index.html'), `<!doctype html><meta charset="utf-8"><title>openclaw-rl report</title>\n<h1>openclaw-rl report</h1>\n` +
      `<p>${steps} published steps, ${evals} held-out evaluations, from ${esc(join(dir, 'metrics.jsonl'))}</p>\n${charts.map((c) => `<p><img src="${c.name}.svg" alt="${esc(c.title)}"></p>`).join('\n')}\n`);
    process.stderr.write(`wrote ${charts.length} chart(s) (${charts.map((c) => c.name).join(', ')}) as SVG${o.png ? ' and PNG' : ''}, and index.html, to ${out}\n`);
  },
});
