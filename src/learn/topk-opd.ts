// Top-K on-policy distillation (upstream's `topk_select`), as pure math. At every response position the
// student's old policy names its K most likely tokens S_t; each accepted hint k gives a teacher (the
// same prompt with the hint, rendered by the chat template) that scores those tokens, and names its own
// top-K. One hint is chosen per turn (or per token), and every v ∈ S_t is trained towards the teacher:
//
//   w_v = softmax(ℓ_old(v)) over S_t                       (detached)
//   A_v = clip(ℓ_teacher(v) − ℓ_old(v), ±c) · w_v          (c = 1, as upstream's launcher)
//   L_t = Σ_{v ∈ S_t} max(−A_v·ρ_v, −A_v·clip(ρ_v, 1 − εl, 1 + εh)),   ρ_v = exp(ℓ_cur(v) − ℓ_old(v))
//
// The sum over S_t is upstream's (not a mean); since Σ w_v = 1 one position's OPD term is at most c in
// size, the same scale as a ±1 reward, so combine (w_rl = w_opd = 1) keeps both terms alive.
import { ppoToken } from './losses.ts';

/** How the hint is chosen among a turn's candidates (upstream's --hint-selection). */
export type HintSelection = 'sequence_optimal' | 'token_optimal' | 'shortest';
export const HINT_SELECTIONS: HintSelection[] = ['sequence_optimal', 'token_optimal', 'shortest'];

/** Defaults as upstream's launcher: K = 4, at most 3 hint candidates, advantage clip ±1. */
export const TOPK_DEFAULTS = { k: 4, maxCandidates: 3, advantageClip: 1, selection: 'sequence_optimal' as HintSelection };

export function clip(x: number, c: number): number { return Math.max(-c, Math.min(c, x)); }

/** softmax of log-probs over a set (the weights w_v; sums to 1). */
export function setWeights(oldLogprobs: number[]): number[] {
  if (oldLogprobs.length === 0) return [];
  const m = Math.max(...oldLogprobs);
  const e = oldLogprobs.map((l) => Math.exp(l - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

/** |S^q_t ∩ S^p_{t,k}|: how many of the student's top-K ids the teacher's top-K also holds. */
export function overlap(studentIds: number[], teacherIds: number[]): number {
  const t = new Set(teacherIds);
  let n = 0;
  for (const id of new Set(studentIds)) if (t.has(id)) n++;
  return n;
}

/**
 * The chosen candidate per response position, from O[k][t] (overlap of candidate k at token t).
 * Candidates are ordered shortest hint first, so ties go to the shorter hint.
 * shortest: 0 everywhere; token_optimal: argmax_k O[k][t]; sequence_optimal: one argmax_k Σ_t O[k][t].
 */
export function chooseCandidates(selection: HintSelection, overlaps: number[][]): number[] {
  if (overlaps.length === 0) throw new RangeError('no hint candidates to choose from');
  const n = overlaps[0].length;
  if (overlaps.some((o) => o.length !== n)) throw new RangeError('every candidate needs an overlap for every response token');
  const argmax = (values: number[]) => values.reduce((best, v, i) => (v > values[best] ? i : best), 0);
  if (selection === 'shortest') return new Array(n).fill(0);
  if (selection === 'token_optimal') return Array.from({ length: n }, (_, t) => argmax(overlaps.map((o) => o[t])));
  const k = argmax(overlaps.map((o) => o.reduce((a, b) => a + b, 0)));
  return new Array(n).fill(k);
}

/** A_v = clip(teacher_v − old_v, ±c) · softmax(old)_v for one position's set. */
export function setAdvantages(teacher: number[], old: number[], c: number): number[] {
  if (teacher.length !== old.length) throw new RangeError(`teacher (${teacher.length}) and old (${old.length}) log-probs of a set differ in length`);
  const w = setWeights(old);
  return old.map((o, i) => clip(teacher[i] - o, c) * w[i]);
}

/** One position's top-K OPD loss: the PPO clipped surrogate summed over the set, with ∂loss/∂ℓ_cur(v). */
export function topkToken(cur: number[], old: number[], advantages: number[], clipLow: number, clipHigh: number): { loss: number; dlogp: number[]; clipped: number } {
  let loss = 0, clipped = 0;
  const dlogp = cur.map((c, i) => {
    const term = ppoToken(c, old[i], advantages[i], clipLow, clipHigh);
    loss += term.loss;
    if (term.clipped) clipped++;
    return term.dlogp;
  });
  return { loss, dlogp, clipped };
}

/**
 * A_v = clip(teacher_v − old_v, ±c) · w_v with w = ½·softmax(old) + ½·softmax(teacher) over the set: the
 * weights of the joined set (`--topk-set union`). Upstream's softmax(old) alone gives a token the teacher
 * wants but the student rarely writes (the requested animal) almost no weight; the teacher's half gives
 * it the weight the teacher puts on it, so the push goes to that token rather than spreading over the
 * whole vocabulary as a push-down of the student's own tokens does.
 */
export function mixedAdvantages(teacher: number[], old: number[], c: number): number[] {
  if (teacher.length !== old.length) throw new RangeError(`teacher (${teacher.length}) and old (${old.length}) log-probs of a set differ in length`);
  const wo = setWeights(old), wt = setWeights(teacher);
  return old.map((o, i) => clip(teacher[i] - o, c) * 0.5 * (wo[i] + wt[i]));
}

/**
 * A position's advantages where two teachers read the same hint (`--opd-teacher both`): the live policy's gap to the
 * student (teacher − old) and the base's. An entry keeps its advantage only as far as both teachers push it the same
 * way — scaled by clip(the smaller gap)/clip(the policy's gap) — and loses it where they disagree. The live teacher's
 * gap is the hint's effect on the current weights, and since the teacher moves with the student it never closes: an
 * opening the hinted model favours ("One day, Zoe") is pushed again every step. The base reading the hint is a fixed
 * target, so the push stops once the student writes that token as often as the hinted base does.
 */
export function agreeingAdvantages(advantages: number[], policyTeacher: number[], baseTeacher: number[], old: number[], c: number): number[] {
  if (policyTeacher.length !== old.length || baseTeacher.length !== old.length || advantages.length !== old.length) throw new RangeError('a set\'s advantages and log-probs differ in length');
  return advantages.map((a, v) => {
    const gp = clip(policyTeacher[v] - old[v], c), gb = clip(baseTeacher[v] - old[v], c);
    if (gp === 0 || gp * gb <= 0) return 0;
    return a * (Math.min(Math.abs(gp), Math.abs(gb)) / Math.abs(gp));
  });
}

/**
 * One position's joined set: the student's top-K S followed by the ids of the teacher's top-K not in S,
 * with the student's old log-probs and the teacher's at every id (`studentAtTeacherTop` and
 * `teacherTopLogprobs` are aligned with `teacherTopIds`).
 */
export function joinSet(studentIds: number[], studentOld: number[], teacherAtStudent: number[],
  teacherTopIds: number[], teacherTopLogprobs: number[], studentAtTeacherTop: number[]): { ids: number[]; old: number[]; teacher: number[] } {
  if (studentOld.length !== studentIds.length || teacherAtStudent.length !== studentIds.length) throw new RangeError('the student\'s set and its log-probs differ in length');
  if (teacherTopLogprobs.length !== teacherTopIds.length || studentAtTeacherTop.length !== teacherTopIds.length) throw new RangeError('the teacher\'s top-K and its log-probs differ in length');
  const ids = [...studentIds], old = [...studentOld], teacher = [...teacherAtStudent];
  const seen = new Set(studentIds);
  teacherTopIds.forEach((id, j) => {
    if (seen.has(id)) return;
    seen.add(id);
    ids.push(id); old.push(studentAtTeacherTop[j]); teacher.push(teacherTopLogprobs[j]);
  });
  return { ids, old, teacher };
}

/** What the trainer has per candidate hint: at each position, the teacher's log-probs at the student's set and its own top-K ids (and their log-probs). */
export interface TeacherCandidate { atStudent: number[][]; topIds: number[][]; topLogprobs?: number[][] }

export interface TopkTargets {
  /** per position: the student's old top-K ids, their old log-probs, and their advantages A_v */
  ids: number[][]; oldLogprobs: number[][]; advantages: number[][];
  /** per position: the chosen candidate, and its overlap with the student's set */
  chosen: number[]; overlapAtChosen: number[];
}

/** The per-position sets and advantages of one turn, from the student's old top-K and the teacher candidates. */
export function topkTargets(studentIds: number[][], studentOld: number[][], candidates: TeacherCandidate[], selection: HintSelection, c: number): TopkTargets {
  const n = studentIds.length;
  for (const cand of candidates) {
    if (cand.atStudent.length !== n || cand.topIds.length !== n) throw new RangeError(`a teacher candidate covers ${cand.atStudent.length} positions, the student ${n}`);
  }
  const overlaps = candidates.map((cand) => cand.topIds.map((ids, t) => overlap(studentIds[t], ids)));
  const chosen = chooseCandidates(selection, overlaps);
  return {
    ids: studentIds, oldLogprobs: studentOld,
    advantages: studentOld.map((old, t) => setAdvantages(candidates[chosen[t]].atStudent[t], old, c)),
    chosen, overlapAtChosen: chosen.map((k, t) => overlaps[k][t]),
  };
}
