// Learning curves as an SVG line chart (axes, ticks, title, legend), and a PNG of it rendered by resvg
// (a small prebuilt renderer; text in the system's fonts, DejaVu Sans preferred).
import { writeFile } from 'node:fs/promises';

export interface Series { label: string; points: { x: number; y: number }[] }

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function lineChartSvg(series: Series[], o: { title: string; xLabel: string; yLabel: string; width?: number; height?: number; yMax?: number; yMin?: number; yFormat?: (y: number) => string }): string {
  const W = o.width ?? 760, H = o.height ?? 460;
  const m = { left: 70, right: 170, top: 50, bottom: 60 };
  const pw = W - m.left - m.right, ph = H - m.top - m.bottom;
  const xMax = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p.x)));
  const yMax = o.yMax ?? 1, yMin = o.yMin ?? 0;
  const yFormat = o.yFormat ?? ((y: number) => `${(y * 100).toFixed(0)}%`);
  const X = (x: number) => m.left + (x / xMax) * pw;
  const Y = (y: number) => m.top + ph - ((y - yMin) / (yMax - yMin)) * ph;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Arial, sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - m.right / 2 + m.left / 2}" y="28" font-size="18" text-anchor="middle" font-weight="bold">${esc(o.title)}</text>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const y = yMin + ((yMax - yMin) * i) / 5;
    parts.push(`<line x1="${m.left}" y1="${Y(y)}" x2="${m.left + pw}" y2="${Y(y)}" stroke="#e5e5e5"/>`,
      `<text x="${m.left - 8}" y="${Y(y) + 4}" font-size="12" text-anchor="end">${esc(yFormat(y))}</text>`);
  }
  const step = xMax <= 16 ? Math.max(1, Math.ceil(xMax / 8)) : Math.max(1, Math.ceil(xMax / 8 / 10) * 10);
  for (let x = 0; x <= xMax; x += step) parts.push(`<line x1="${X(x)}" y1="${m.top + ph}" x2="${X(x)}" y2="${m.top + ph + 5}" stroke="black"/>`, `<text x="${X(x)}" y="${m.top + ph + 20}" font-size="12" text-anchor="middle">${x}</text>`);
  parts.push(
    `<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + ph}" stroke="black"/>`,
    `<line x1="${m.left}" y1="${m.top + ph}" x2="${m.left + pw}" y2="${m.top + ph}" stroke="black"/>`,
    `<text x="${m.left + pw / 2}" y="${H - 15}" font-size="14" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text x="18" y="${m.top + ph / 2}" font-size="14" text-anchor="middle" transform="rotate(-90 18 ${m.top + ph / 2})">${esc(o.yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = s.points.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${pts}" fill="none" stroke="${c}" stroke-width="2.5"/>`);
    for (const p of s.points) parts.push(`<circle cx="${X(p.x).toFixed(1)}" cy="${Y(p.y).toFixed(1)}" r="3.5" fill="${c}"/>`);
    const ly = m.top + 10 + i * 24;
    parts.push(`<line x1="${m.left + pw + 20}" y1="${ly}" x2="${m.left + pw + 45}" y2="${ly}" stroke="${c}" stroke-width="3"/>`, `<text x="${m.left + pw + 52}" y="${ly + 5}" font-size="13">${esc(s.label)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

export async function svgToPng(svg: string, file: string): Promise<void> {
  const { Resvg } = await import('@resvg/resvg-js');
  const png = new Resvg(svg, { background: 'white', font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  await writeFile(file, png);
}
