// Token budgets of environments for the served model: how much of its context one observation may
// take, and cutting text to a budget counted with the model's own tokenizer. A 512-token model and a
// 32k model get the same environments; only what fits differs.

/** What an environment knows of the served model: its context and its token count of a text. */
export interface ModelBudget {
  contextTokens: number;
  countTokens: (text: string) => number;
}

/**
 * The observation budget for a model: three eighths of its context (a 512-token model: 192 tokens,
 * room for the compact form of every GUI task page; a 32k model: 12k, where every page fits in full).
 */
export function observationBudget(contextTokens: number): number {
  return Math.max(32, Math.floor((contextTokens * 3) / 8));
}

/** A rough token count for when no tokenizer is given: about four characters a token. */
export const roughTokens = (s: string): number => Math.ceil(s.length / 4);

/** Text cut to `budget` tokens (by characters, binary search), with a note when cut. */
export function fitText(text: string, budget: number, count: (s: string) => number): string {
  if (count(text) <= budget) return text;
  const note = '\n… (cut)';
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (count(text.slice(0, mid) + note) <= budget) lo = mid; else hi = mid - 1;
  }
  return text.slice(0, lo) + note;
}
