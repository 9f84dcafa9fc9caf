// The tool-call environment (ReTool-style): an arithmetic task, a `calculator` tool and a
// `python` code interpreter, at most 16 tool calls, and an answer verifier for the outcome reward.
// The interpreter is CPython run in the bubblewrap sandbox (sandbox.ts): the same isolation as the
// terminal environment — no network, no host files, rlimits on memory, CPU and processes, and a
// wall-clock kill — rather than a second, weaker mechanism (an in-process interpreter would share
// the trainer's memory and event loop).
import { calculate, formatNumber, CalculatorError } from './calculator.ts';
import { isCorrect, answerReward, type ArithmeticTask } from './arithmetic.ts';
import { Sandbox, describeRun, sandboxSupport, type SandboxLimits } from './sandbox.ts';
import { EnvRequestError, type Environment, type EnvFactory, type ResetResult, type Task, type ToolCallRequest, type Observation, type EvaluateRequest, type Evaluation, type ToolSpec } from './types.ts';

export interface ToolCallEnvOptions {
  maxToolCalls: number;
  /** offer the python tool (needs the sandbox); the calculator is always there */
  python: boolean;
  /** observations are cut to this many characters (upstream: 1024) */
  maxObservationChars: number;
  sandbox: Partial<SandboxLimits>;
  system: string;
}

export const TOOLCALL_DEFAULTS: ToolCallEnvOptions = {
  maxToolCalls: 16, python: true, maxObservationChars: 1024, sandbox: { wallMs: 10_000, cpuSeconds: 5 },
  // no system prompt: the chat template lists the tools, and small models see no unfamiliar text
  system: '',
};

export const CALCULATOR_TOOL: ToolSpec = {
  type: 'function',
  function: { name: 'calculator', description: 'Evaluate an arithmetic expression.', parameters: { type: 'object', properties: { expression: { type: 'string', description: 'e.g. 12 + 7' } }, required: ['expression'] } },
};
export const PYTHON_TOOL: ToolSpec = {
  type: 'function',
  function: { name: 'python', description: 'Run Python code and get what it prints.', parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] } },
};

export class ToolCallEnv implements Environment {
  private readonly o: ToolCallEnvOptions;
  private task: ArithmeticTask | null = null;
  private calls = 0;
  private sandbox: Sandbox | null = null;

  constructor(o: Partial<ToolCallEnvOptions> = {}) { this.o = { ...TOOLCALL_DEFAULTS, ...o }; }

  private get pythonOn(): boolean { return this.o.python && sandboxSupport().ok; }

  async reset(task: Task): Promise<ResetResult> {
    if (typeof task.question !== 'string' || typeof task.answer !== 'number') throw new EnvRequestError(`a tool-call task needs a string 'question' and a numeric 'answer' (task ${task.key})`);
    this.task = task as unknown as ArithmeticTask;
    this.calls = 0;
    return { system: this.o.system, user: this.task.question, tools: this.pythonOn ? [CALCULATOR_TOOL, PYTHON_TOOL] : [CALCULATOR_TOOL], maxToolCalls: this.o.maxToolCalls };
  }

  private cut(s: string): string {
    return s.length > this.o.maxObservationChars ? `${s.slice(0, this.o.maxObservationChars)}…` : s;
  }

  async execTool(call: ToolCallRequest): Promise<Observation> {
    this.calls++;
    const done = this.calls >= this.o.maxToolCalls;
    const obs = (content: string, error: boolean): Observation => ({ content: this.cut(content), error, done });
    if (call.name === 'calculator') {
      const expr = call.arguments.expression ?? call.arguments.expr ?? call.arguments.input;
      if (typeof expr !== 'string' && typeof expr !== 'number') return obs(`Error: calculator needs {"expression": "…"}`, true);
      try { return obs(formatNumber(calculate(String(expr))), false); } catch (e) {
        return obs(`Error: ${e instanceof CalculatorError ? e.message : 'invalid expression'}`, true);
      }
    }
    if (call.name === 'python' && this.pythonOn) {
      const code = call.arguments.code;
      if (typeof code !== 'string') return obs(`Error: python needs {"code": "…"}`, true);
      this.sandbox ??= new Sandbox(this.o.sandbox);
      const r = await this.sandbox.exec(['python3', '-I', '-'], { stdin: code });
      return obs(describeRun(r, this.sandbox.limits, this.o.maxObservationChars), r.exitCode !== 0);
    }
    return obs(`Error: unknown tool '${call.name}' (tools: calculator${this.pythonOn ? ', python' : ''})`, true);
  }

  async evaluate(req: EvaluateRequest): Promise<Evaluation> {
    if (!this.task) throw new EnvRequestError('evaluate before reset');
    const correct = isCorrect(req.finalMessage, this.task.answer);
    return { score: answerReward(correct, req.toolCalls), success: correct, detail: correct ? 'correct' : `expected ${formatNumber(this.task.answer)}` };
  }

  async close(): Promise<void> { this.sandbox?.destroy(); this.sandbox = null; }
}

export function toolCallFactory(o: Partial<ToolCallEnvOptions> = {}): EnvFactory {
  return { name: 'toolcall', create: () => new ToolCallEnv(o) };
}
