// Personas for the personalization benchmark: what a simulated user asks for, how it decides whether
// an answer satisfies it, and what it says back. Loaded from JSON (personas/*.json or --persona-file)
// and validated with errors that name the offending field.
import { readFileSync } from 'node:fs';

/** A satisfaction rule; rules compose with all/any/not. */
export type Rule =
  | { all: Rule[] } | { any: Rule[] } | { not: Rule }
  | { includes: string[] }   // at least one of these words (whole words, case-insensitive)
  | { avoid: string[] }      // none of these words
  | { maxWords: number } | { minWords: number }
  | { regex: string; flags?: string };

export interface Persona {
  name: string;
  description: string;
  /** opening prompts used for training conversations, and held out for evaluation */
  trainPrompts: string[];
  heldOutPrompts: string[];
  /**
   * optional third set of requests, worded unlike both others, for choosing a recipe: `bench personalize`
   * evaluates them beside the held-out ones, so settings are compared on these and the held-out set stays untuned
   */
  validationPrompts?: string[];
  satisfied: Rule;
  feedback: { satisfied: string[]; unsatisfied: string[] };
  /**
   * judged answers per session (default 1): the user's feedback on each answer is also its next
   * request, and the answer to it is judged by the feedback that follows
   */
  turns?: number;
  /** optional further user turns after the last feedback (each answered, not judged by the persona) */
  followUps?: string[];
  /**
   * the preference in the words of a hint ("The user wants a story about a cat."): only the evaluation
   * reads it, for the second fluency band (bench/evaluate.ts); the learner never sees it
   */
  preference?: string;
  /** sampling settings the simulated user's client sends */
  maxTokens?: number;
  temperature?: number;
}

export class PersonaError extends Error { override name = 'PersonaError'; }

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function strings(v: unknown, path: string, min = 1): string[] {
  if (!Array.isArray(v) || v.length < min || !v.every((s) => typeof s === 'string' && s.trim().length > 0)) {
    throw new PersonaError(`${path} must be an array of at least ${min} non-empty string${min === 1 ? '' : 's'}`);
  }
  return v as string[];
}

export function validateRule(v: unknown, path = 'satisfied'): Rule {
  if (!isObj(v)) throw new PersonaError(`${path} must be a rule object`);
  const keys = Object.keys(v).filter((k) => k !== 'flags');
  if (keys.length !== 1) throw new PersonaError(`${path} must have exactly one of all, any, not, includes, avoid, maxWords, minWords, regex (has ${keys.join(', ') || 'none'})`);
  const [k] = keys;
  switch (k) {
    case 'all': case 'any': {
      const list = v[k];
      if (!Array.isArray(list) || list.length === 0) throw new PersonaError(`${path}.${k} must be a non-empty array of rules`);
      return { [k]: list.map((r, i) => validateRule(r, `${path}.${k}[${i}]`)) } as Rule;
    }
    case 'not': return { not: validateRule(v.not, `${path}.not`) };
    case 'includes': case 'avoid': return { [k]: strings(v[k], `${path}.${k}`) } as Rule;
    case 'maxWords': case 'minWords':
      if (!Number.isInteger(v[k]) || (v[k] as number) < 0) throw new PersonaError(`${path}.${k} must be a non-negative integer`);
      return { [k]: v[k] } as Rule;
    case 'regex':
      if (typeof v.regex !== 'string') throw new PersonaError(`${path}.regex must be a string`);
      try { new RegExp(v.regex, typeof v.flags === 'string' ? v.flags : undefined); } catch (e) { throw new PersonaError(`${path}.regex is not a valid regular expression: ${(e as Error).message}`); }
      return { regex: v.regex, ...(typeof v.flags === 'string' ? { flags: v.flags } : {}) };
    default: throw new PersonaError(`${path} has unknown rule '${k}' (known: all, any, not, includes, avoid, maxWords, minWords, regex)`);
  }
}

export function validatePersona(v: unknown): Persona {
  if (!isObj(v)) throw new PersonaError('a persona must be a JSON object');
  if (typeof v.name !== 'string' || !/^[\w.-]+$/.test(v.name)) throw new PersonaError('name must be a non-empty string of letters, digits, _ . -');
  if (!isObj(v.feedback)) throw new PersonaError('feedback must be an object {satisfied: [...], unsatisfied: [...]}');
  const p: Persona = {
    name: v.name,
    description: typeof v.description === 'string' ? v.description : '',
    trainPrompts: strings(v.trainPrompts, 'trainPrompts'),
    heldOutPrompts: strings(v.heldOutPrompts, 'heldOutPrompts'),
    satisfied: validateRule(v.satisfied),
    feedback: { satisfied: strings(v.feedback.satisfied, 'feedback.satisfied'), unsatisfied: strings(v.feedback.unsatisfied, 'feedback.unsatisfied') },
  };
  if (v.preference !== undefined) { if (typeof v.preference !== 'string' || !v.preference.trim()) throw new PersonaError('preference must be a non-empty string'); p.preference = v.preference; }
  if (v.turns !== undefined) { if (!Number.isInteger(v.turns) || (v.turns as number) < 1 || (v.turns as number) > 16) throw new PersonaError('turns must be an integer from 1 to 16'); p.turns = v.turns as number; }
  if (v.followUps !== undefined) p.followUps = strings(v.followUps, 'followUps', 0);
  if (v.maxTokens !== undefined) { if (!Number.isInteger(v.maxTokens) || (v.maxTokens as number) < 1) throw new PersonaError('maxTokens must be a positive integer'); p.maxTokens = v.maxTokens as number; }
  if (v.temperature !== undefined) { if (typeof v.temperature !== 'number' || v.temperature < 0 || v.temperature > 2) throw new PersonaError('temperature must be a number from 0 to 2'); p.temperature = v.temperature; }
  const overlap = p.heldOutPrompts.filter((h) => p.trainPrompts.includes(h));
  if (overlap.length) throw new PersonaError(`heldOutPrompts must not repeat trainPrompts (both have ${JSON.stringify(overlap[0])})`);
  if (v.validationPrompts !== undefined) {
    p.validationPrompts = strings(v.validationPrompts, 'validationPrompts');
    const seen = p.validationPrompts.find((x) => p.trainPrompts.includes(x) || p.heldOutPrompts.includes(x));
    if (seen !== undefined) throw new PersonaError(`validationPrompts must not repeat trainPrompts or heldOutPrompts (${JSON.stringify(seen)})`);
  }
  return p;
}

export function loadPersona(file: string): Persona {
  let raw: unknown;
  try { raw = JSON.parse(readFileSync(file, 'utf8')); } catch (e) { throw new PersonaError(`${file}: ${(e as Error).message}`); }
  try { return validatePersona(raw); } catch (e) { throw new PersonaError(`${file}: ${(e as Error).message}`); }
}

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

export function check(rule: Rule, text: string): boolean {
  if ('all' in rule) return rule.all.every((r) => check(r, text));
  if ('any' in rule) return rule.any.some((r) => check(r, text));
  if ('not' in rule) return !check(rule.not, text);
  if ('includes' in rule) { const w = new Set(words(text)); return rule.includes.some((x) => w.has(x.toLowerCase())); }
  if ('avoid' in rule) { const w = new Set(words(text)); return !rule.avoid.some((x) => w.has(x.toLowerCase())); }
  if ('maxWords' in rule) return words(text).length <= rule.maxWords;
  if ('minWords' in rule) return words(text).length >= rule.minWords;
  return new RegExp(rule.regex, rule.flags).test(text);
}
