// Process and event-loop metrics in Prometheus text, named as prom-client's default metrics are (so existing
// dashboards fit): CPU seconds (counters), resident and heap memory, open resources, start time, and the
// event loop's delay since the previous scrape (a blocked loop delays every request).
import { monitorEventLoopDelay } from 'node:perf_hooks';

type IntervalHistogram = ReturnType<typeof monitorEventLoopDelay>;
import { readdirSync } from 'node:fs';

let loopDelay: IntervalHistogram | null = null;
const START_SECONDS = Math.round(Date.now() / 1000 - process.uptime());

/**
 * The longest gap between two ticks of a 10 ms timer since the last scrape, minus the 10 ms: the whole length
 * of a block. The histogram above gives the distribution, but it does not always record one long block in
 * full (seen: a 300 ms block reported as 14 ms), and the longest block is the number an operator needs.
 */
let lastTick = 0;
let longestGapMs = 0;
const TICK_MS = 10;

/** One process-wide event-loop delay monitor (10 ms resolution), started on first use. */
function loop(): IntervalHistogram {
  if (!loopDelay) {
    loopDelay = monitorEventLoopDelay({ resolution: TICK_MS });
    loopDelay.enable();
    lastTick = performance.now();
    setInterval(() => {
      const now = performance.now();
      longestGapMs = Math.max(longestGapMs, now - lastTick - TICK_MS);
      lastTick = now;
    }, TICK_MS).unref();
  }
  return loopDelay;
}

function openFds(): number | null {
  try { return readdirSync('/proc/self/fd').length; } catch { return null; } // not Linux
}

export function renderProcessMetrics(): string {
  const lines: string[] = [];
  const metric = (name: string, type: 'counter' | 'gauge', help: string, value: number | null, labels = '') => {
    if (value === null || !Number.isFinite(value)) return;
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name}${labels} ${value}`);
  };
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  metric('process_cpu_user_seconds_total', 'counter', 'User CPU time spent, in seconds.', cpu.user / 1e6);
  metric('process_cpu_system_seconds_total', 'counter', 'System CPU time spent, in seconds.', cpu.system / 1e6);
  metric('process_cpu_seconds_total', 'counter', 'User and system CPU time spent, in seconds.', (cpu.user + cpu.system) / 1e6);
  metric('process_start_time_seconds', 'gauge', 'Start time of the process since the Unix epoch, in seconds.', START_SECONDS);
  metric('process_resident_memory_bytes', 'gauge', 'Resident memory size, in bytes.', mem.rss);
  metric('process_open_fds', 'gauge', 'Open file descriptors.', openFds());
  metric('nodejs_heap_size_total_bytes', 'gauge', 'V8 heap size, in bytes.', mem.heapTotal);
  metric('nodejs_heap_size_used_bytes', 'gauge', 'V8 heap in use, in bytes.', mem.heapUsed);
  metric('nodejs_external_memory_bytes', 'gauge', 'Memory of C++ objects bound to JavaScript (buffers, WebAssembly memory), in bytes.', mem.external + mem.arrayBuffers);
  metric('nodejs_active_resources', 'gauge', 'Resources keeping the event loop alive (sockets, timers, …).', process.getActiveResourcesInfo().length);
  const h = loop();
  const s = (ns: number) => ns / 1e9;
  if (h.count > 0) {
    metric('nodejs_eventloop_lag_mean_seconds', 'gauge', 'Mean event loop delay since the last scrape, in seconds.', s(h.mean));
    metric('nodejs_eventloop_lag_p50_seconds', 'gauge', 'Median event loop delay since the last scrape, in seconds.', s(h.percentile(50)));
    metric('nodejs_eventloop_lag_p99_seconds', 'gauge', '99th percentile event loop delay since the last scrape, in seconds.', s(h.percentile(99)));
  }
  const longest = Math.max(h.count > 0 ? s(h.max) : 0, Math.max(0, longestGapMs, performance.now() - lastTick - TICK_MS) / 1e3);
  metric('nodejs_eventloop_lag_max_seconds', 'gauge', 'Longest event loop delay since the last scrape, in seconds.', longest);
  h.reset();
  longestGapMs = 0;
  metric('nodejs_version_info', 'gauge', 'Node.js version.', 1, `{version="${process.version}",major="${process.versions.node.split('.')[0]}"}`);
  return lines.join('\n') + '\n';
}

/** Starts the event-loop monitor now, so the first scrape has data. */
export function startProcessMetrics(): void { loop(); }
