/** "45s", "2m", "1m 5s" for a number of seconds. */
export function formatDuration(total: number): string {
  if (total < 60) return `${total}s`; // @case @mutate
  const m = Math.floor(total / 60);
  const s = total % 60;
  if (s === 0) return `${m}m`; // @case
  return `${m}m ${s}s`;
}
