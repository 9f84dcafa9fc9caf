// The terminal environment: each episode gets its own sandbox (a temporary working tree under
// bubblewrap, no network, rlimits), seeded with the task's files. Tools: `run(command)` — a shell
// command in the working tree — and `write_file(path, content)`. Every command runs in a fresh
// sandboxed shell over the same tree (state lives in files, not in shell variables), so a command
// that hangs or forks without end is killed alone and the episode goes on. At the end the task's
// checks run in the tree; reward = 2·(fraction of checks passed) − 1.
import { Sandbox, describeRun, type SandboxLimits } from './sandbox.ts';
import { EnvRequestError, type Environment, type EnvFactory, type ResetResult, type Task, type ToolCallRequest, type Observation, type EvaluateRequest, type Evaluation, type ToolSpec } from './types.ts';

export interface TerminalTask extends Task {
  description: string;
  /** files the working tree starts with (relative path → content) */
  files?: Record<string, string>;
  /** each check is a shell command run in the final tree; exit code 0 = passed */
  checks: { name: string; command: string }[];
}

export interface TerminalEnvOptions { maxToolCalls: number; maxObservationChars: number; sandbox: Partial<SandboxLimits>; system: string }

export const TERMINAL_DEFAULTS: TerminalEnvOptions = {
  maxToolCalls: 16, maxObservationChars: 2000, sandbox: { wallMs: 10_000, cpuSeconds: 10 },
  system: 'You are in a Linux shell, in the folder /work. Use the tools to do the task, then say DONE.',
};

export const TERMINAL_TOOLS: ToolSpec[] = [
  { type: 'function', function: { name: 'run', description: 'run a shell command in /work', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } },
  { type: 'function', function: { name: 'write_file', description: 'write a file', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] } } },
];

/** Reward from check results: 2·passed/total − 1 (−1 when nothing passes, +1 when all do). */
export function checkReward(passed: number, total: number): number {
  return total === 0 ? -1 : (2 * passed) / total - 1;
}

export function validateTerminalTask(t: Task): TerminalTask {
  const bad = (m: string) => new EnvRequestError(`terminal task ${t.key}: ${m}`);
  if (typeof t.description !== 'string' || !t.description) throw bad(`needs a 'description'`);
  if (!Array.isArray(t.checks) || t.checks.length === 0) throw bad(`needs a non-empty 'checks' list of {name, command}`);
  for (const c of t.checks as unknown[]) if (!c || typeof (c as { command?: unknown }).command !== 'string') throw bad('every check needs a string command');
  if (t.files !== undefined && (typeof t.files !== 'object' || Array.isArray(t.files) || Object.values(t.files as object).some((v) => typeof v !== 'string'))) throw bad(`'files' must map paths to string contents`);
  return t as TerminalTask;
}

export class TerminalEnv implements Environment {
  private readonly o: TerminalEnvOptions;
  private task: TerminalTask | null = null;
  private sandbox: Sandbox | null = null;
  private calls = 0;

  constructor(o: Partial<TerminalEnvOptions> = {}) { this.o = { ...TERMINAL_DEFAULTS, ...o }; }

  async reset(task: Task): Promise<ResetResult> {
    this.task = validateTerminalTask(task);
    this.sandbox?.destroy();
    this.sandbox = new Sandbox(this.o.sandbox);
    this.calls = 0;
    for (const [path, content] of Object.entries(this.task.files ?? {})) {
      const r = await this.sandbox.writeFile(path, content);
      if (r.exitCode !== 0) throw new Error(`could not seed ${path}: ${r.stderr.trim()}`);
    }
    return { system: this.o.system, user: this.task.description, tools: TERMINAL_TOOLS, maxToolCalls: this.o.maxToolCalls };
  }

  async execTool(call: ToolCallRequest): Promise<Observation> {
    if (!this.sandbox) throw new EnvRequestError('exec_tool before reset');
    this.calls++;
    const done = this.calls >= this.o.maxToolCalls;
    const a = call.arguments;
    if (call.name === 'run') {
      if (typeof a.command !== 'string') return { content: 'Error: run needs {"command": "…"}', error: true, done };
      const r = await this.sandbox.run(a.command);
      return { content: describeRun(r, this.sandbox.limits, this.o.maxObservationChars), error: r.exitCode !== 0, done };
    }
    if (call.name === 'write_file') {
      if (typeof a.path !== 'string' || typeof a.content !== 'string') return { content: 'Error: write_file needs {"path": "…", "content": "…"}', error: true, done };
      const r = await this.sandbox.writeFile(a.path, a.content);
      return r.exitCode === 0 ? { content: `wrote ${Buffer.byteLength(a.content)} bytes to ${a.path}`, error: false, done } : { content: describeRun(r, this.sandbox.limits, this.o.maxObservationChars), error: true, done };
    }
    return { content: `Error: unknown tool '${call.name}' (tools: run, write_file)`, error: true, done };
  }

  async evaluate(_req: EvaluateRequest): Promise<Evaluation> {
    if (!this.task || !this.sandbox) throw new EnvRequestError('evaluate before reset');
    const results: string[] = [];
    let passed = 0;
    for (const c of this.task.checks) {
      const r = await this.sandbox.run(c.command);
      const ok = r.exitCode === 0 && !r.timedOut;
      if (ok) passed++;
      results.push(`${ok ? 'PASS' : 'FAIL'} ${c.name}`);
    }
    const total = this.task.checks.length;
    return { score: checkReward(passed, total), success: passed === total, passed, total, detail: results.join('; ') };
  }

  async close(): Promise<void> { this.sandbox?.destroy(); this.sandbox = null; }
}

export function terminalFactory(o: Partial<TerminalEnvOptions> = {}): EnvFactory {
  return { name: 'terminal', create: () => new TerminalEnv(o) };
}
