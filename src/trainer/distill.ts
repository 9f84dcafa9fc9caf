// Top-K OPD at train time (upstream's `topk_select`): for each sample of a batch, the student's old
// top-K at every response position (the weights being trained, before this step — upstream's
// old_actor forward), then one teacher pass per hint candidate (the request with that hint in the last
// user turn, rendered by the chat template: learn/hint-prompt.ts) gathering its log-probs at the
// student's ids and naming its own top-K, and the per-turn hint choice and set advantages
// (learn/topk-opd.ts). An input without hints gets one candidate, the teacher on its own prompt (a pull of the
// student's top-K towards the teacher); the learning loop no longer asks for that (trainer/loop.ts says why).
import type { Engine, Datum, ChatMessage, ToolSpec, TopKScoreRequest } from '../engine/types.ts';
import { withHint } from '../learn/hint-prompt.ts';
import { hintMetAt } from '../learn/votes.ts';
import { IncrementalDecoder } from '../engine/embedded/detokenize.ts';
import { topkTargets, joinSet, mixedAdvantages, agreeingAdvantages, type HintSelection } from '../learn/topk-opd.ts';
import type { OpdTeacher } from './options.ts';
import type { WireMessage } from '../conversation/messages.ts';

export interface DistillOptions {
  k: number;
  selection: HintSelection;
  advantageClip: number;
  /** scale of the set advantages (w_opd) */
  weight: number;
  teacher: OpdTeacher;
  /** the set per position: the student's top-K (upstream), or joined with the chosen teacher's top-K (learn/topk-opd.ts, mixedAdvantages) */
  set?: 'student' | 'union';
  /**
   * distil each position only until the answer meets the hint chosen there (learn/votes.ts, hintMetAt): later positions
   * get zero set advantages, since once the answer has what the hint asks for, what the hinted teacher still adds is
   * more of it (a fish in every sentence)
   */
  untilMet?: boolean;
}

/** What one sample needs: its exact ids, the request (to re-render with a hint) and its hint candidates ([] = no hint). */
export interface DistillInput {
  promptIds: number[];
  responseIds: number[];
  temperature: number;
  request: { messages: WireMessage[]; tools?: unknown; templateKwargs?: Record<string, unknown> };
  hints: string[];
}

export interface DistillStats {
  /** samples given a distillation set */
  samples: number;
  /** candidates scored, and candidates dropped because the hinted prompt does not fit the context */
  candidates: number; tooLong: number;
  /** mean overlap |S_student ∩ S_teacher| at the chosen hint, and mean index of the chosen hint */
  overlapMean: number; chosenMean: number;
  /** mean |teacher − old| over the set entries (before clipping) */
  gapMean: number;
  /** ids the teacher's top-K added to the sets (union sets), per position */
  joined: number;
  /** positions left undistilled because the answer already met their hint (untilMet) */
  afterMet: number;
}

/** For each response position, whether the text before it already meets the hint chosen there (untilMet). */
function metCutoffs(engine: Engine, responseIds: number[], hintAt: (string | null)[]): boolean[] {
  // the answer's text through each token, decoded once as it grows
  const decoder = new IncrementalDecoder(engine.tokenizer);
  let text = '';
  const prefixes = responseIds.map((id) => (text += decoder.push(id)));
  const metAt = new Map<string, number | null>();
  return hintAt.map((h, t) => {
    if (h === null) return false;
    if (!metAt.has(h)) metAt.set(h, hintMetAt(h, prefixes));
    const m = metAt.get(h)!;
    return m !== null && t > m;
  });
}

/** Distillation sets for the inputs (null where no candidate fits the context). */
export async function distillSets(engine: Engine, inputs: DistillInput[], o: DistillOptions): Promise<{ sets: (Datum['distill'] | null)[]; stats: DistillStats }> {
  if (!engine.scoreTopK) throw new Error('top-K OPD needs an engine with top-K scoring (the embedded engine); use --opd-mode token');
  const stats: DistillStats = { samples: 0, candidates: 0, tooLong: 0, overlapMean: 0, chosenMean: 0, gapMean: 0, joined: 0, afterMet: 0 };
  const sets: (Datum['distill'] | null)[] = inputs.map(() => null);
  if (inputs.length === 0) return { sets, stats };
  const max = engine.info.contextLength;
  // teacher prompts per input: one per hint, or the prompt itself when there is no hint (with the hint each stands for)
  const candidatesOf = inputs.map((x): { hint: string | null; ids: number[] }[] => {
    if (x.hints.length === 0) return [{ hint: null, ids: x.promptIds }];
    return x.hints.map((h) => ({ hint: h, ids: engine.tokenizer.encodeChat(withHint(x.request.messages, h) as ChatMessage[], { tools: (x.request.tools ?? undefined) as ToolSpec[] | undefined, templateKwargs: x.request.templateKwargs }) }))
      .filter((p) => { const fits = p.ids.length + x.responseIds.length - 1 <= max; if (!fits) stats.tooLong++; return fits; });
  });
  const teacherPrompts = candidatesOf.map((c) => c.map((p) => p.ids));
  // scoring runs per temperature (the sets are of softmax(logits / T), as the samples were drawn)
  const byTemperature = new Map<number, number[]>();
  inputs.forEach((x, i) => { if (teacherPrompts[i].length) byTemperature.set(x.temperature, [...(byTemperature.get(x.temperature) ?? []), i]); });
  let entries = 0;
  for (const [temperature, idx] of byTemperature) {
    const student = await engine.scoreTopK(idx.map((i) => ({ promptIds: inputs[i].promptIds, responseIds: inputs[i].responseIds })), o.k, { temperature, adapter: 'current' });
    const requests: TopKScoreRequest[] = [], owner: number[] = [];
    idx.forEach((i, j) => { for (const p of teacherPrompts[i]) { requests.push({ promptIds: p, responseIds: inputs[i].responseIds, gatherIds: student[j].topIds }); owner.push(j); } });
    const teacher = await engine.scoreTopK(requests, o.k, { temperature, adapter: o.teacher === 'base' ? 'base' : 'current' });
    stats.candidates += requests.length;
    const perSample = idx.map((_, j) => {
      const candidates = teacher.filter((_, r) => owner[r] === j).map((t) => ({ atStudent: t.gathered!, topIds: t.topIds, topLogprobs: t.topLogprobs }));
      const s = student[j];
      const targets = topkTargets(s.topIds, s.topLogprobs, candidates, o.selection, o.advantageClip);
      stats.samples++;
      targets.chosen.forEach((k, t) => {
        stats.overlapMean += targets.overlapAtChosen[t];
        stats.chosenMean += k;
        candidates[k].atStudent[t].forEach((lp, v) => { stats.gapMean += Math.abs(lp - s.topLogprobs[t][v]); entries++; });
      });
      return { targets, candidates };
    });
    // the joined set needs the student's old log-probs at the chosen teacher's top-K: one more student pass
    const atTeacherTop = o.set === 'union'
      ? await engine.scoreTopK(idx.map((i, j) => ({
        promptIds: inputs[i].promptIds, responseIds: inputs[i].responseIds,
        gatherIds: perSample[j].targets.chosen.map((k, t) => perSample[j].candidates[k].topIds[t]),
      })), o.k, { temperature, adapter: 'current' })
      : null;
    const finals = idx.map((i, j) => {
      const { targets, candidates } = perSample[j];
      let { ids, oldLogprobs, advantages } = targets;
      let teacherAt = targets.chosen.map((k, t) => candidates[k].atStudent[t]);
      if (atTeacherTop) {
        const joined = targets.chosen.map((k, t) => joinSet(ids[t], oldLogprobs[t], candidates[k].atStudent[t], candidates[k].topIds[t], candidates[k].topLogprobs[t], atTeacherTop[j].gathered![t]));
        ids = joined.map((x) => x.ids);
        oldLogprobs = joined.map((x) => x.old);
        teacherAt = joined.map((x) => x.teacher);
        advantages = joined.map((x) => mixedAdvantages(x.teacher, x.old, o.advantageClip));
        stats.joined += joined.reduce((a, x, t) => a + x.ids.length - targets.ids[t].length, 0);
      }
      return { ids, oldLogprobs, advantages, teacherAt };
    });
    // --opd-teacher both: the base reading the chosen hint, at every entry of the final sets, one pass per hint in use
    if (o.teacher === 'both') {
      const requests: TopKScoreRequest[] = [];
      // per sample: the request index of each chosen hint's base pass
      const passOf = idx.map((i, j) => new Map([...new Set(perSample[j].targets.chosen)].map((k) => {
        requests.push({ promptIds: teacherPrompts[i][k], responseIds: inputs[i].responseIds, gatherIds: finals[j].ids });
        return [k, requests.length - 1] as const;
      })));
      const base = await engine.scoreTopK(requests, 0, { temperature, adapter: 'base' });
      stats.candidates += requests.length;
      idx.forEach((_, j) => {
        const f = finals[j], chosen = perSample[j].targets.chosen;
        f.advantages = f.advantages.map((row, t) => agreeingAdvantages(row, f.teacherAt[t], base[passOf[j].get(chosen[t])!].gathered![t], f.oldLogprobs[t], o.advantageClip));
      });
    }
    idx.forEach((i, j) => {
      const { targets } = perSample[j];
      const { ids, oldLogprobs, advantages } = finals[j];
      const cutoff = o.untilMet ? metCutoffs(engine, inputs[i].responseIds, targets.chosen.map((k) => candidatesOf[i][k].hint)) : null;
      if (cutoff) stats.afterMet += cutoff.filter((c) => c).length;
      sets[i] = { ids, oldLogprobs, advantages: advantages.map((row, t) => row.map((a) => (cutoff?.[t] ? 0 : a * o.weight))) };
    });
  }
  const positions = sets.reduce((a, s) => a + (s ? s.ids.length : 0), 0);
  if (positions) { stats.overlapMean /= positions; stats.chosenMean /= positions; stats.joined /= positions; }
  if (entries) stats.gapMean /= entries;
  return { sets, stats };
}
