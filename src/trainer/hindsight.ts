// Hindsight answers: learning from a user's correction what the first answer should have been.
//
// In a session the user asks, gets an answer, corrects it ("No, I wanted a story about a cat."), gets
// a new answer and approves of it. The approved answer was really served and really approved (the
// judge read the user's reply); what hindsight adds is one assumption: that it would also have been
// a good answer to the request before the correction. So the approved answer is trained, with the
// approved turn's own reward term, as an answer to each request of the run of corrected turns just
// before it (back to the last turn that was not corrected). Its "old" log-probs are the current
// policy's on that earlier prompt, so the PPO ratio starts at 1 and the clip bounds each step as for
// any sample. No feedback is made up: only served answers and judged replies are used.
import type { Datum } from '../engine/types.ts';

/** A session's earlier main turn, nearest first: its judged score (null = not judged) and its prompt ids. */
export interface EarlierTurn { score: number | null; promptIds: number[] }

/**
 * The prompts an approved answer is also trained on: those of the consecutive turns before it whose
 * judged score was negative (nearest first), stopping at the first that was not, at most `max`.
 */
export function hindsightPrompts(earlier: EarlierTurn[], max = 3): number[][] {
  const out: number[][] = [];
  for (const t of earlier) {
    if (t.score === null || t.score >= 0 || out.length >= max) break;
    out.push(t.promptIds);
  }
  return out;
}

/**
 * The hindsight data of an approved sample: its response under each earlier prompt, with the sample's
 * own advantages; `behaviour` gives the current policy's log-probs of the response after a prompt.
 */
export async function hindsightData(sample: Datum, prompts: number[][], behaviour: (promptIds: number[], responseIds: number[], temperature: number) => Promise<number[]>, contextLength: number): Promise<Datum[]> {
  const out: Datum[] = [];
  for (const promptIds of prompts) {
    if (promptIds.length + sample.responseIds.length - 1 > contextLength) continue;
    const temperature = sample.temperature ?? 1;
    out.push({
      promptIds, responseIds: sample.responseIds, behaviourLogprobs: await behaviour(promptIds, sample.responseIds, temperature),
      advantages: sample.advantages, lossMask: sample.lossMask, temperature,
    });
  }
  return out;
}
