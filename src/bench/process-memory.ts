// Memory of a process tree, from /proc (Linux): the resident set (RSS) and the proportional set size
// (PSS, shared pages split among the processes sharing them — the honest sum for a browser whose
// renderers share most of their code). Used to measure what parallel browsers cost.
import { readdirSync, readFileSync } from 'node:fs';

export interface TreeMemory { processes: number; rssBytes: number; pssBytes: number }

/** Parent pid of every process we can read. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      // the command name may hold spaces and parentheses: fields start after the last ')'
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(d), Number(rest[1]));
    } catch { /* gone meanwhile */ }
  }
  return out;
}

/** Every descendant of `root` (not `root` itself). */
export function descendants(root: number): number[] {
  const pp = parents();
  const out: number[] = [];
  const frontier = [root];
  while (frontier.length) {
    const p = frontier.pop()!;
    for (const [pid, ppid] of pp) if (ppid === p) { out.push(pid); frontier.push(pid); }
  }
  return out;
}

/** RSS and PSS summed over the descendants of `root` (kB fields of smaps_rollup). */
export function treeMemory(root = process.pid): TreeMemory {
  let rss = 0, pss = 0, n = 0;
  for (const pid of descendants(root)) {
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rss += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      pss += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      n++;
    } catch { /* gone, or not ours to read */ }
  }
  return { processes: n, rssBytes: rss, pssBytes: pss };
}
