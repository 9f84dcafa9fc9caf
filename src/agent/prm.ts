// Optional process reward: a judge scores each tool-call step of an episode (m votes of
// \boxed{1} / \boxed{-1}, the mean of the valid ones), through the same chat backends as the judge
// of `serve` (an OpenAI-compatible endpoint, or the served model itself).
import type { ChatBackend } from '../judge/backends.ts';
import { parseBoxed } from '../learn/votes.ts';
import type { EpisodeResult } from './episode.ts';

export interface StepJudgeOptions { votes: number; temperature: number; maxTokens: number }

export const STEP_JUDGE_DEFAULTS: StepJudgeOptions = { votes: 3, temperature: 0.6, maxTokens: 256 };

/** The judge's prompt for one step: the task, the action and what came back. */
export function stepPrompt(task: string, action: string, observation: string): { role: string; content: string }[] {
  return [
    { role: 'system', content: 'You check one step of an agent working on a task. Answer \\boxed{1} if the step is correct and useful, \\boxed{-1} if it is wrong or useless.' },
    { role: 'user', content: `Task: ${task}\n\nStep: ${action}\n\nResult: ${observation}\n\nIs this step correct and useful?` },
  ];
}

/** Mean vote per tool-call step (NaN for a step no vote could score). */
export async function scoreSteps(backend: ChatBackend, ep: EpisodeResult, o: StepJudgeOptions = STEP_JUDGE_DEFAULTS): Promise<number[]> {
  const task = String(ep.task.question ?? ep.task.description ?? ep.task.key);
  const steps = ep.turns.filter((t) => t.call && t.observation !== null);
  return Promise.all(steps.map(async (t) => {
    const votes = await Promise.all(Array.from({ length: o.votes }, () => backend.complete(stepPrompt(task, t.text, t.observation!), { temperature: o.temperature, maxTokens: o.maxTokens }).then(parseBoxed, () => null)));
    const valid = votes.filter((v): v is -1 | 0 | 1 => v !== null);
    return valid.length ? valid.reduce((a, b) => a + b, 0 as number) / valid.length : NaN;
  }));
}
