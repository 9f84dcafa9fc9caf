// Prometheus text metrics: counters, gauges and latency histograms, no dependencies; process and event-loop
// metrics from process-metrics.ts.
import { renderProcessMetrics, startProcessMetrics } from './process-metrics.ts';

const BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000];

class Histogram {
  readonly counts = new Array(BUCKETS_MS.length + 1).fill(0);
  sum = 0;
  n = 0;
  observe(ms: number): void {
    let i = 0;
    while (i < BUCKETS_MS.length && ms > BUCKETS_MS[i]) i++;
    this.counts[i]++;
    this.sum += ms;
    this.n++;
  }
  render(name: string, help: string): string {
    const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
    let cum = 0;
    BUCKETS_MS.forEach((b, i) => { cum += this.counts[i]; lines.push(`${name}_bucket{le="${b / 1000}"} ${cum}`); });
    lines.push(`${name}_bucket{le="+Inf"} ${this.n}`, `${name}_sum ${this.sum / 1000}`, `${name}_count ${this.n}`);
    return lines.join('\n');
  }
}

export class Metrics {
  readonly requests = new Map<string, number>(); // by status code
  promptTokens = 0;
  completionTokens = 0;
  active = 0;
  readonly latency = new Histogram();
  readonly firstToken = new Histogram();
  turns = { main: 0, side: 0, aborted: 0 };
  /** the newest weights version a response was served with */
  policyVersion = 0;

  constructor() { startProcessMetrics(); }

  countRequest(status: number): void { this.requests.set(String(status), (this.requests.get(String(status)) ?? 0) + 1); }

  render(extra: { activeSessions: number }): string {
    const out: string[] = [
      '# HELP openclaw_rl_requests_total API requests (chat and text completions) by HTTP status.', '# TYPE openclaw_rl_requests_total counter',
      ...[...this.requests].map(([s, n]) => `openclaw_rl_requests_total{status="${s}"} ${n}`),
      '# HELP openclaw_rl_prompt_tokens_total Prompt tokens processed.', '# TYPE openclaw_rl_prompt_tokens_total counter', `openclaw_rl_prompt_tokens_total ${this.promptTokens}`,
      '# HELP openclaw_rl_completion_tokens_total Tokens generated.', '# TYPE openclaw_rl_completion_tokens_total counter', `openclaw_rl_completion_tokens_total ${this.completionTokens}`,
      '# HELP openclaw_rl_turns_total Recorded turns by kind.', '# TYPE openclaw_rl_turns_total counter',
      ...Object.entries(this.turns).map(([k, n]) => `openclaw_rl_turns_total{kind="${k}"} ${n}`),
      '# HELP openclaw_rl_requests_in_flight Requests being served (queue depth of the engine).', '# TYPE openclaw_rl_requests_in_flight gauge', `openclaw_rl_requests_in_flight ${this.active}`,
      '# HELP openclaw_rl_active_sessions Sessions not yet ended.', '# TYPE openclaw_rl_active_sessions gauge', `openclaw_rl_active_sessions ${extra.activeSessions}`,
      '# HELP openclaw_rl_policy_version Weights version new requests are served with.', '# TYPE openclaw_rl_policy_version gauge', `openclaw_rl_policy_version ${this.policyVersion}`,
      this.latency.render('openclaw_rl_request_duration_seconds', 'Time from request to last byte.'),
      this.firstToken.render('openclaw_rl_time_to_first_token_seconds', 'Time from request to the first generated token.'),
    ];
    return out.join('\n') + '\n' + renderProcessMetrics();
  }
}
