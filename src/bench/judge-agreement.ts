// How the judge's verdicts line up with what the simulated user actually thought. The persona knows
// whether each answer satisfied it; the judge only reads the user's reply. Counting the judge's
// scores per true verdict shows how much of the feedback reaches the trainer as the right signal
// (a neutral score trains nothing in binary; a wrong sign trains the wrong way), and which hints it
// wrote. Pure tallying; the benchmark collects the pairs from the store.

export interface JudgedTurn { satisfied: boolean; score: number | null; hint: string | null }

/** Judge scores of the turns with one true verdict (null score: not judged by the end of the run). */
export interface ScoreTally { positive: number; neutral: number; negative: number; unjudged: number }

export interface JudgeAgreement {
  satisfied: ScoreTally;
  unsatisfied: ScoreTally;
  /** share of judged turns whose score has the sign of the user's verdict (neutral counts as a miss) */
  signAgreement: number | null;
  /** the most frequent hints, with how often each was the turn's chosen hint */
  hints: { hint: string; count: number }[];
}

const empty = (): ScoreTally => ({ positive: 0, neutral: 0, negative: 0, unjudged: 0 });

export function judgeAgreement(turns: JudgedTurn[], topHints = 5): JudgeAgreement {
  const satisfied = empty(), unsatisfied = empty();
  const hints = new Map<string, number>();
  let agree = 0, judged = 0;
  for (const t of turns) {
    const tally = t.satisfied ? satisfied : unsatisfied;
    if (t.score === null) { tally.unjudged++; continue; }
    judged++;
    if (t.score > 0) tally.positive++; else if (t.score < 0) tally.negative++; else tally.neutral++;
    if ((t.score > 0 && t.satisfied) || (t.score < 0 && !t.satisfied)) agree++;
    if (t.hint) hints.set(t.hint, (hints.get(t.hint) ?? 0) + 1);
  }
  return {
    satisfied, unsatisfied, signAgreement: judged ? agree / judged : null,
    hints: [...hints].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, topHints).map(([hint, count]) => ({ hint, count })),
  };
}

/** "+1/0/−1" counts of a tally, for one-line reports. */
export function formatTally(t: ScoreTally): string {
  return `+1 ${t.positive} · 0 ${t.neutral} · −1 ${t.negative}${t.unjudged ? ` · unjudged ${t.unjudged}` : ''}`;
}
