// The SWE environment (mini-swe-agent style): each episode gets a fresh sandboxed copy of a small git
// repository and one tool, `bash`. Each turn the policy writes its THOUGHT and makes exactly one bash
// call (30 s each, 30 calls at most); the command `submit` ends the episode with `git diff` of the
// working tree against the base commit as the patch (an episode that stops without submitting is
// judged on the same diff). Evaluation never looks at the agent's sandbox: a FRESH sandbox is made
// from the task's own files, the patch is applied with `git apply`, and the task's tests run there.
// A patch that touches the tests, the test runner or interpreter configuration is unresolved before
// anything runs. Reward: +1 resolved (every fail-to-pass and pass-to-pass test passes), −1 otherwise.
// Given the served model's context and tokenizer, an opening prompt that would take more than half
// the context is written compactly (a short system prompt, the tool without its description, the
// task's brief), and command output is cut to the observation budget: a 512-token model gets steps.
import { Sandbox, describeRun, type SandboxLimits } from './sandbox.ts';
import { patchPaths, isProtected } from './patch.ts';
import { fitText, roughTokens, observationBudget, type ModelBudget } from './budget.ts';
import { EnvRequestError, type Environment, type EnvFactory, type ResetResult, type Task, type ToolCallRequest, type Observation, type EvaluateRequest, type Evaluation, type ToolSpec } from './types.ts';

export interface SweTest { name: string; command: string }

export interface SweTask extends Task {
  kind?: 'swe';
  language?: string;
  /** the bug report the policy reads */
  description: string;
  /** a shorter bug report, for models with small contexts (default: the description) */
  brief?: string;
  /** the repository at its buggy state: relative path → content */
  files: Record<string, string>;
  tests: { failToPass: SweTest[]; passToPass: SweTest[] };
  /** paths the patch may not touch (a folder ends in '/'); configuration files are always protected */
  protected: string[];
  testFiles?: string[];
  difficulty?: number;
  bug?: { kind: string; file: string; line: number };
  /** the reference fix (never shown to the policy) */
  fix?: string;
}

export interface SweEnvOptions {
  maxSteps: number; maxObservationChars: number; maxPatchBytes: number; sandbox: Partial<SandboxLimits>; testWallMs: number; system: string;
  /** the served model's context in tokens (null: unknown, the full prompt and the character cap only) */
  contextTokens: number | null;
  /** the served model's token count of a text */
  countTokens: (text: string) => number;
  /** the system prompt of the compact form */
  compactSystem: string;
}

export const SWE_DEFAULTS: SweEnvOptions = {
  maxSteps: 30, maxObservationChars: 2000, maxPatchBytes: 256 * 1024, testWallMs: 60_000,
  // node's V8 reserves ~1 GiB of address space at start, so the per-process limit is 3 GiB of address space
  sandbox: { wallMs: 30_000, cpuSeconds: 30, memoryBytes: 3 * 2 ** 30, outputBytes: 512 * 1024 },
  system: 'You fix bugs in the git repository at /work. Each turn, write THOUGHT: your reasoning, then make exactly one ' +
    'bash tool call with one command. Do not change the tests. When the fix is done, run the command `submit`.',
  contextTokens: null, countTokens: roughTokens,
  compactSystem: 'Fix the bug. One bash command per turn. Then run submit.',
};

export const BASH_TOOL: ToolSpec = {
  type: 'function',
  function: { name: 'bash', description: 'run one bash command in /work (30 s limit); `submit` ends the task', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
};
/** The tool without its description, for small contexts. */
export const BASH_TOOL_COMPACT: ToolSpec = { type: 'function', function: { name: 'bash', parameters: BASH_TOOL.function.parameters } };

const GIT = 'git -c user.name=openclaw-rl -c user.email=env@openclaw-rl.invalid -c core.hooksPath=/dev/null -c advice.detachedHead=false';
/** The commands whose effect is "submit": `submit`, or mini-swe-agent's echo marker. */
export const isSubmit = (command: string) => /^\s*(submit|echo\s+['"]?COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT['"]?)\s*$/.test(command);

export function validateSweTask(t: Task): SweTask {
  const bad = (m: string) => new EnvRequestError(`swe task ${t.key}: ${m}`);
  if (typeof t.description !== 'string' || !t.description) throw bad(`needs a 'description'`);
  const files = t.files as Record<string, unknown> | undefined;
  if (!files || typeof files !== 'object' || Array.isArray(files) || Object.keys(files).length === 0 || Object.values(files).some((v) => typeof v !== 'string')) throw bad(`'files' must map paths to string contents`);
  const tests = t.tests as SweTask['tests'] | undefined;
  const list = (x: unknown) => Array.isArray(x) && x.every((c) => c && typeof c.command === 'string' && typeof c.name === 'string');
  if (!tests || !list(tests.failToPass) || tests.failToPass.length === 0 || !list(tests.passToPass ?? [])) throw bad(`'tests' needs failToPass (non-empty) and passToPass lists of {name, command}`);
  if (!Array.isArray(t.protected) || t.protected.some((p) => typeof p !== 'string')) throw bad(`'protected' must be a list of paths`);
  return { ...t, tests: { failToPass: tests.failToPass, passToPass: tests.passToPass ?? [] } } as SweTask;
}

/** A sandbox holding the task's repository, committed as the base; and the base commit's id. */
async function repoSandbox(task: SweTask, limits: Partial<SandboxLimits>): Promise<{ sb: Sandbox; base: string }> {
  // no byte-code caches: a stale .pyc carried in a patch could stand in for the source it came from
  const sb = new Sandbox(limits, { node: true, env: { PYTHONDONTWRITEBYTECODE: '1' } });
  try {
    try { sb.seed(task.files); } catch (e) { throw new EnvRequestError(`swe task ${task.key}: ${(e as Error).message}`); }
    // setup is ours, not the agent's: it gets a generous wall clock whatever the per-command limit
    const r = await sb.run(`git init -q -b main && printf '__pycache__/\\n*.pyc\\nnode_modules/\\n' >> .git/info/exclude && ${GIT} add -A && ${GIT} commit -q -m base && git rev-parse HEAD`, { wallMs: Math.max(sb.limits.wallMs, 60_000) });
    if (r.exitCode !== 0) throw new Error(`git init failed: ${(r.stderr || r.stdout).trim()}`);
    return { sb, base: r.stdout.trim() };
  } catch (e) { sb.destroy(); throw e; }
}

export interface PatchVerdict extends Evaluation { touched: string[]; applied: boolean; tests: { name: string; passed: boolean; failToPass: boolean }[] }

/**
 * Judge a patch against a task in a FRESH sandbox built from the task's files alone: refuse patches
 * that touch protected paths, apply with `git apply`, run every fail-to-pass and pass-to-pass test.
 */
export async function evaluatePatch(task: SweTask, patch: string, o: Partial<SweEnvOptions> = {}): Promise<PatchVerdict> {
  const opts = { ...SWE_DEFAULTS, ...o };
  const total = task.tests.failToPass.length + task.tests.passToPass.length;
  const verdict = (success: boolean, detail: string, extra: Partial<PatchVerdict> = {}): PatchVerdict =>
    ({ score: success ? 1 : -1, success, passed: 0, total, detail, touched: [], applied: false, tests: [], ...extra });
  if (Buffer.byteLength(patch) > opts.maxPatchBytes) return verdict(false, `patch larger than ${opts.maxPatchBytes} bytes`);
  const touched = patchPaths(patch);
  const forbidden = touched.filter((p) => isProtected(p, task.protected));
  if (forbidden.length) return verdict(false, `patch edits protected files: ${forbidden.join(', ')}`, { touched });
  const { sb } = await repoSandbox(task, opts.sandbox);
  try {
    let applied = true;
    if (patch.trim()) {
      const w = await sb.writeFile('/tmp/agent.patch', patch.endsWith('\n') ? patch : `${patch}\n`);
      const r = w.exitCode === 0 ? await sb.run(`${GIT} apply --whitespace=nowarn /tmp/agent.patch`, { wallMs: opts.testWallMs }) : w;
      if (r.exitCode !== 0) return verdict(false, `patch does not apply: ${(r.stderr || r.stdout).trim().slice(0, 300)}`, { touched });
    } else applied = false;
    const tests: PatchVerdict['tests'] = [];
    for (const [list, f2p] of [[task.tests.failToPass, true], [task.tests.passToPass, false]] as const) {
      for (const t of list) {
        const r = await sb.run(t.command, { wallMs: opts.testWallMs });
        tests.push({ name: t.name, passed: r.exitCode === 0 && !r.timedOut, failToPass: f2p });
      }
    }
    const passed = tests.filter((t) => t.passed).length;
    const success = passed === total;
    const detail = `${success ? 'resolved' : 'unresolved'}${applied ? '' : ' (empty patch)'}: ${tests.map((t) => `${t.passed ? 'PASS' : 'FAIL'} ${t.name}`).join('; ')}`;
    return { ...verdict(success, detail, { touched, applied, tests }), passed };
  } finally { sb.destroy(); }
}

export class SweEnv implements Environment {
  readonly o: SweEnvOptions;
  private task: SweTask | null = null;
  private sandbox: Sandbox | null = null;
  private base = 'HEAD';
  private steps = 0;
  private submitted: string | null = null;
  /** the last patch judged (for logs and tests) */
  lastPatch: string | null = null;

  constructor(o: Partial<SweEnvOptions> = {}) { this.o = { ...SWE_DEFAULTS, ...o, sandbox: { ...SWE_DEFAULTS.sandbox, ...o.sandbox } }; }

  async reset(task: Task): Promise<ResetResult> {
    this.task = validateSweTask(task);
    this.sandbox?.destroy();
    const { sb, base } = await repoSandbox(this.task, this.o.sandbox);
    this.sandbox = sb;
    this.base = base;
    this.steps = 0;
    this.submitted = null;
    const full = { system: this.o.system, user: this.task.description, tools: [BASH_TOOL], maxToolCalls: this.o.maxSteps };
    const ctx = this.o.contextTokens;
    const opening = this.o.countTokens(`${full.system}\n${full.user}\n${BASH_TOOL.function.description}`);
    if (ctx === null || opening <= ctx / 2) return full;
    return { system: this.o.compactSystem, user: this.task.brief ?? this.task.description, tools: [BASH_TOOL_COMPACT], maxToolCalls: this.o.maxSteps };
  }

  /** A command's output as the policy reads it: cut to the observation budget, the exit status kept. */
  private output(r: Awaited<ReturnType<Sandbox['run']>>): string {
    const text = describeRun(r, this.sandbox!.limits, this.o.maxObservationChars);
    if (this.o.contextTokens === null) return text;
    const budget = observationBudget(this.o.contextTokens);
    const cut = text.lastIndexOf('\n[');
    const [body, status] = cut >= 0 ? [text.slice(0, cut), text.slice(cut + 1)] : ['', text];
    return body ? `${fitText(body, budget - this.o.countTokens(status) - 1, this.o.countTokens)}\n${status}` : status;
  }

  /** The working tree's changes against the base commit (new files included; the agent's own commits too). */
  async diff(): Promise<string> {
    if (!this.sandbox) throw new EnvRequestError('diff before reset');
    const r = await this.sandbox.run(`${GIT} add -A >/dev/null 2>&1; ${GIT} diff --cached --no-color --no-ext-diff --binary ${this.base}`);
    if (r.truncated) return `${r.stdout}\n(patch cut)`; // over the output cap: will not apply, so unresolved
    return r.exitCode === 0 ? r.stdout : '';
  }

  async execTool(call: ToolCallRequest): Promise<Observation> {
    if (!this.sandbox) throw new EnvRequestError('exec_tool before reset');
    this.steps++;
    const done = this.steps >= this.o.maxSteps;
    if (call.name !== 'bash') return { content: `Error: unknown tool '${call.name}' (the only tool is bash)`, error: true, done };
    const command = call.arguments.command;
    if (typeof command !== 'string' || !command.trim()) return { content: 'Error: bash needs {"command": "…"}', error: true, done };
    if (isSubmit(command)) {
      this.submitted = await this.diff();
      const lines = this.submitted ? this.submitted.split('\n').length - 1 : 0;
      return { content: `Submitted a patch of ${lines} lines.`, error: false, done: true };
    }
    const r = await this.sandbox.run(command);
    return { content: this.output(r), error: r.exitCode !== 0, done };
  }

  async evaluate(_req: EvaluateRequest): Promise<Evaluation> {
    if (!this.task || !this.sandbox) throw new EnvRequestError('evaluate before reset');
    const patch = this.submitted ?? await this.diff();
    this.lastPatch = patch;
    const { touched: _t, applied: _a, tests: _x, ...e } = await evaluatePatch(this.task, patch, this.o);
    return e;
  }

  async close(): Promise<void> { this.sandbox?.destroy(); this.sandbox = null; }
}

/** The SWE environment; with the served model's budget, prompts and outputs fit its context. */
export function sweFactory(o: Partial<SweEnvOptions> = {}, model?: ModelBudget): EnvFactory {
  const sized = model ? { contextTokens: model.contextTokens, countTokens: model.countTokens, ...o } : o;
  return { name: 'swe', create: () => new SweEnv(sized) };
}
