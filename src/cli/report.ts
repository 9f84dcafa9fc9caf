// `openclaw-rl report --data-dir DIR --out DIR [--png]`: the learning curves of a data folder as SVG
// files (and PNG through the project's plot helper), plus an index.html that shows them together.
import { parseArgs } from 'node:util';
import { resolve, join } from 'node:path';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { UsageError } from './args.ts';
import { readMetrics } from '../dashboard/metrics-log.ts';
import { renderReport } from '../dashboard/report.ts';
import { svgToPng } from '../bench/plot.ts';

export async function reportCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: { 'data-dir': { type: 'string' }, out: { type: 'string' }, png: { type: 'boolean', default: false } } });
  const dir = resolve(o['data-dir'] ?? process.env.OPENCLAW_RL_DATA_DIR ?? '.openclaw-rl');
  if (!existsSync(join(dir, 'metrics.jsonl'))) throw new UsageError(`no metrics.jsonl in ${dir}: a server writes it there after its first training step (pass --data-dir)`);
  if (!o.out) throw new UsageError('--out DIR is required (the folder the charts are written to)');
  const out = resolve(o.out);
  const lines = readMetrics(dir);
  const charts = renderReport(lines);
  if (!charts.length) throw new UsageError(`${join(dir, 'metrics.jsonl')} has no published steps or evaluations yet`);
  mkdirSync(out, { recursive: true });
  for (const c of charts) {
    writeFileSync(join(out, `${c.name}.svg`), c.svg);
    if (o.png) await svgToPng(c.svg, join(out, `${c.name}.png`));
  }
  const steps = lines.filter((l) => l.event === 'step' && l.status === 'published').length;
  const evals = lines.filter((l) => l.event === 'eval').length;
  writeFileSync(join(out, 'index.html'), `<!doctype html><meta charset="utf-8"><title>openclaw-rl report</title>\n<h1>openclaw-rl report</h1>\n<p>${steps} published steps, ${evals} held-out evaluations, from ${join(dir, 'metrics.jsonl').replace(/[<&]/g, '')}</p>\n${charts.map((c) => `<p><img src="${c.name}.svg" alt="${c.title}"></p>`).join('\n')}\n`);
  process.stderr.write(`wrote ${charts.length} chart(s) (${charts.map((c) => c.name).join(', ')})${o.png ? ' as SVG and PNG' : ' as SVG'} and index.html to ${out}\n`);
}
