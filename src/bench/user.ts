// A simulated user: holds real conversations with the server through the official `openai` SDK
// (streaming, as OpenClaw does), judges each answer with its persona's rules, replies with feedback
// from its pools, and ends the session. A session has the persona's `turns` judged answers: the user
// asks, reads the answer, replies with feedback (which the server sees as the answer's next state),
// reads the answer to that feedback, and so on; the last feedback ends the session. Seeded: the same
// seed gives the same conversations.
import OpenAI from 'openai';
import { check, type Persona } from './persona.ts';
import { Rng } from '../engine/embedded/rng.ts';

/** One judged answer of a session: what the user saw, whether it satisfied the persona, and the reply. */
export interface TurnResult { answer: string; satisfied: boolean; feedback: string; policyVersion: number }
/** A session: its opening request, its first answer (as before multi-turn sessions), and every judged turn. */
export interface ConversationResult { prompt: string; answer: string; satisfied: boolean; feedback: string; policyVersion: number; turns: TurnResult[] }

export class SimulatedUser {
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly persona: Persona;
  private readonly rng: Rng;
  readonly id: string;

  constructor(opts: { baseUrl: string; apiKey?: string; model: string; persona: Persona; seed: number; id: string }) {
    this.client = new OpenAI({ baseURL: opts.baseUrl, apiKey: opts.apiKey ?? 'none', maxRetries: 0 });
    this.model = opts.model;
    this.persona = opts.persona;
    this.rng = new Rng(opts.seed);
    this.id = opts.id;
  }

  private pick<T>(xs: T[]): T { return xs[Math.floor(this.rng.next() * xs.length)]; }

  private async stream(messages: { role: 'user' | 'assistant'; content: string }[], session: string, seed: number, done: boolean): Promise<{ text: string; version: number }> {
    const stream = await this.client.chat.completions.create({
      model: this.model, messages, stream: true, max_tokens: this.persona.maxTokens ?? 48, temperature: this.persona.temperature ?? 1, seed,
    }, { headers: { 'x-session-id': session, 'x-turn-type': 'main', ...(done ? { 'x-session-done': '1' } : {}) } });
    let text = '', version = -1;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      const v = (chunk as unknown as { policy_version?: number }).policy_version;
      if (typeof v === 'number') version = v;
    }
    return { text, version };
  }

  /**
   * One session: the opening request, then `persona.turns` (default 1) answers, each followed by the
   * persona's feedback on it (the next state the judge reads); the server answers the last feedback
   * too (and any follow-ups), which ends the session.
   */
  async converse(n: number): Promise<ConversationResult> {
    const prompt = this.pick(this.persona.trainPrompts);
    const session = `${this.id}-${n}`;
    const seed = Math.floor(this.rng.next() * 2 ** 31);
    const history: { role: 'user' | 'assistant'; content: string }[] = [{ role: 'user', content: prompt }];
    const turns: TurnResult[] = [];
    const judged = this.persona.turns ?? 1;
    for (let i = 0; i < judged; i++) {
      const r = await this.stream(history, session, seed + i, false);
      const satisfied = check(this.persona.satisfied, r.text);
      const feedback = this.pick(satisfied ? this.persona.feedback.satisfied : this.persona.feedback.unsatisfied);
      turns.push({ answer: r.text, satisfied, feedback, policyVersion: r.version });
      history.push({ role: 'assistant', content: r.text }, { role: 'user', content: feedback });
    }
    const followUps = this.persona.followUps ?? [];
    let reply = await this.stream(history, session, seed + judged, followUps.length === 0);
    for (let i = 0; i < followUps.length; i++) {
      history.push({ role: 'assistant', content: reply.text }, { role: 'user', content: followUps[i] });
      reply = await this.stream(history, session, seed + judged + 1 + i, i === followUps.length - 1);
    }
    const first = turns[0];
    return { prompt, answer: first.answer, satisfied: first.satisfied, feedback: first.feedback, policyVersion: first.policyVersion, turns };
  }
}
