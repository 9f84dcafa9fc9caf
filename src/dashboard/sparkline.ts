// Terminal sparklines for `openclaw-rl status`: a series as block characters, scaled to its range.

const BLOCKS = '▁▂▃▄▅▆▇█';

/** The last `width` values as block characters; null/NaN values are shown as spaces. */
export function sparkline(values: (number | null)[], width = 40): string {
  const xs = values.slice(-width);
  const finite = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  if (!finite.length) return '';
  const lo = Math.min(...finite), hi = Math.max(...finite);
  return xs.map((x) => {
    if (x === null || !Number.isFinite(x)) return ' ';
    if (hi === lo) return BLOCKS[3];
    return BLOCKS[Math.min(BLOCKS.length - 1, Math.floor(((x - lo) / (hi - lo)) * BLOCKS.length))];
  }).join('');
}
