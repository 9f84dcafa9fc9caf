// Judge-scored satisfaction, as upstream's personalization evaluator does it: a judge reads the
// persona's preference, the request and the answer, grades how well the answer meets the preference
// with one of 0, 0.25, 0.5, 0.75, 1 in \boxed{}, and the sample's score is the mean of 5 votes. It
// sits next to the rule-based check (persona.satisfied), which is exact but only as good as its rule.
// The prompts are ours; a compact one serves small-context models (the self judge on stories260k-chat).
import type { ChatBackend } from '../judge/backends.ts';
import { meanGrade, parseBoxedGrade } from '../learn/votes.ts';

export interface SatisfactionJudgeOptions {
  votes: number;
  temperature: number;
  maxTokens: number;
  /** compact prompt for models with a small context */
  compact: boolean;
}
export const SATISFACTION_JUDGE_DEFAULTS: SatisfactionJudgeOptions = { votes: 5, temperature: 0.6, maxTokens: 512, compact: false };

/** Characters of the answer the compact prompt keeps. */
const COMPACT_ANSWER_CHARS = 300;

export function satisfactionPrompt(preference: string, request: string, answer: string, compact: boolean): { role: string; content: string }[] {
  if (compact) {
    return [
      { role: 'system', content: 'Grade how well the answer meets the preference: \\boxed{0}, \\boxed{0.25}, \\boxed{0.5}, \\boxed{0.75} or \\boxed{1}.' },
      { role: 'user', content: `Preference: ${preference}\nRequest: ${request}\nAnswer: ${answer.slice(0, COMPACT_ANSWER_CHARS)}` },
    ];
  }
  return [
    {
      role: 'system',
      content: 'You evaluate whether an assistant personalised its answer to a user. You are given what the user prefers, the request, ' +
        'and the answer. Judge only how well the answer meets the preference (not its general quality): 1 = fully, 0.75 = mostly, ' +
        '0.5 = partly, 0.25 = barely, 0 = not at all. Think briefly, then end with exactly one grade in \\boxed{}, e.g. \\boxed{0.75}.',
    },
    { role: 'user', content: `User preference: ${preference}\n\nRequest: ${request}\n\nAnswer:\n${answer}` },
  ];
}

export interface JudgedSatisfaction { score: number | null; grades: (number | null)[] }

/** The mean of `votes` grades for one answer (null when no vote parsed); failed calls count as invalid votes. */
export async function judgeSatisfaction(backend: ChatBackend, preference: string, request: string, answer: string, o: SatisfactionJudgeOptions = SATISFACTION_JUDGE_DEFAULTS): Promise<JudgedSatisfaction> {
  const messages = satisfactionPrompt(preference, request, answer, o.compact);
  const grades = await Promise.all(Array.from({ length: o.votes }, async () => {
    try { return parseBoxedGrade(await backend.complete(messages, { temperature: o.temperature, maxTokens: o.maxTokens })); } catch { return null; }
  }));
  return { score: meanGrade(grades), grades };
}
