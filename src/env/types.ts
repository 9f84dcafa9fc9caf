// The environment interface of the general-agent track, shaped after upstream's pool-server verbs:
// allocate → reset (task → first user message and tool schemas) → exec_tool (tool call →
// observation) → evaluate (score) → close, with heartbeats keeping a lease alive. An Environment is
// one episode's world (a sandbox, a problem); an EnvPool leases them out, in-process or over HTTP.
import type { ToolSpec } from '../engine/types.ts';

export type { ToolSpec };

/** A task as the pool sees it: a key (routing, grouping) and whatever the environment needs. */
export interface Task { key: string; [field: string]: unknown }

export interface ResetResult {
  /** system prompt for the policy (may be empty) */
  system: string;
  /** the first user message */
  user: string;
  tools: ToolSpec[];
  /** the episode ends after this many tool calls */
  maxToolCalls: number;
}

export interface ToolCallRequest { name: string; arguments: Record<string, unknown> }

export interface Observation {
  /** what the tool said, as the policy will read it */
  content: string;
  /** the call failed (bad arguments, non-zero exit, timeout…): still an observation, not a crash */
  error: boolean;
  /** the environment ends the episode here (e.g. the tool-call budget is spent) */
  done: boolean;
}

export interface EvaluateRequest {
  /** the policy's last message (the answer, for environments with an answer verifier) */
  finalMessage: string;
  /** tool calls made in the episode */
  toolCalls: number;
}

export interface Evaluation {
  /** the outcome reward in [-1, 1] */
  score: number;
  /** task-level success (answer correct, all checks passed) */
  success: boolean;
  passed?: number;
  total?: number;
  detail?: string;
}

/** One episode's world. Tool-level failures come back as observations; a throw means the environment broke. */
export interface Environment {
  reset(task: Task): Promise<ResetResult>;
  execTool(call: ToolCallRequest): Promise<Observation>;
  evaluate(req: EvaluateRequest): Promise<Evaluation>;
  close(): Promise<void>;
}

export interface EnvFactory {
  /** 'toolcall' | 'terminal' | … */
  readonly name: string;
  create(): Environment;
}

/** The pool protocol: what a rollout worker calls, whether the pool is in this process or behind HTTP. */
export interface EnvPool {
  allocate(taskKey: string, requestId?: string): Promise<string>;
  heartbeat(leaseId: string): Promise<void>;
  reset(leaseId: string, task: Task): Promise<ResetResult>;
  execTool(leaseId: string, call: ToolCallRequest): Promise<Observation>;
  evaluate(leaseId: string, req: EvaluateRequest): Promise<Evaluation>;
  close(leaseId: string): Promise<void>;
  stats(): Promise<PoolStats>;
  /** how often a lease holder should heartbeat (ms) */
  readonly heartbeatMs: number;
}

export interface PoolStats { env: string; capacity: number; active: number; allocated: number; completed: number; failed: number; reclaimed: number }

/** The pool is at capacity (HTTP 429): try again later or elsewhere. */
export class PoolFullError extends Error {
  override name = 'PoolFullError';
}

/**
 * The lease is gone: it timed out without heartbeats, its environment crashed or hung, or its
 * server died. The episode is failed and never trained on.
 */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** The request itself is wrong (unknown lease verb order, bad task, bad arguments): HTTP 400. */
export class EnvRequestError extends Error {
  override name = 'EnvRequestError';
}
