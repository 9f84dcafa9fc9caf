// A learning server for dashboard tests: the real stories260K engine behind the HTTP API, with the
// lexical judge, the PPO trainer and the same tracking (metrics.jsonl, version archive, dashboard)
// as `serve`. The judge and trainer are ticked by the test, so each step happens when the test says.
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { Store } from '../../src/store/store.ts';
import { startServer, type RunningServer } from '../../src/api/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { Tracking } from '../../src/dashboard/tracking.ts';
import { STORIES, tempDir } from './models.ts';
import { post } from './server.ts';

export interface LearningServer {
  url: string; engine: EmbeddedEngine; store: Store; dataDir: string; server: RunningServer;
  judge: JudgeLoop; trainer: TrainerLoop; tracking: Tracking;
  /** one conversation: a story request, the user's feedback (dog stories are liked), session done */
  converse(c: number, extra?: { secret?: string }): Promise<void>;
  /** judge what is due and train every full batch */
  learn(): Promise<number>;
  /** stop serving and close everything but the data folder */
  stop(): Promise<void>;
  close(): Promise<void>;
}

const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily'];

export interface LearningServerOptions {
  apiKey?: string; dataDir?: string; batchSize?: number; method?: 'binary' | 'opd' | 'combine'; klCoef?: number;
  /** what the scripted user likes in an answer, and what it says when the answer lacks it */
  likes?: RegExp; wish?: string;
}

export async function startLearningServer(o: LearningServerOptions = {}): Promise<LearningServer> {
  const likes = o.likes ?? /\bdog/i, wish = o.wish ?? 'No, I wanted a story about a dog.';
  const engine = await EmbeddedEngine.load(STORIES);
  const t = o.dataDir ? { dir: o.dataDir, cleanup: () => {} } : tempDir('ocrl-dash-');
  const store = new Store(t.dir);
  const tracking = new Tracking({ store, engine, dataDir: t.dir, modelId: 'stories', judgeKind: 'lexical', learning: true });
  // every batch steps (A = r, neutral turns kept): the tests count steps and samples
  const trainer = new TrainerLoop(store, engine, { method: o.method ?? 'binary', rewardBaseline: 'none', keepNeutral: true, klCoef: o.klCoef ?? 0, batchSize: o.batchSize ?? 4, learningRate: 1e-2, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${t.dir}/checkpoints`, maxStaleness: 8, onStep: tracking.onStep });
  await trainer.init();
  tracking.attach(trainer);
  const server = await startServer({
    engine, store, modelId: 'stories', port: 0, apiKey: o.apiKey, dashboard: tracking.dashboard, publishedVersion: () => tracking.publishedVersion(),
    status: () => ({ judge: 'lexical', trainer: trainer.status() }),
  });
  const judge = new JudgeLoop(store, new LexicalJudge(), { hints: true, concurrency: 8 });
  const auth: Record<string, string> = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
  let stopped = false;
  const stop = async () => { if (stopped) return; stopped = true; await server.close(); await engine.close(); tracking.close(); store.close(); };
  return {
    url: server.url, engine, store, dataDir: t.dir, server, judge, trainer, tracking,
    async converse(c, extra = {}) {
      const prompt = PROMPTS[c % PROMPTS.length] + (extra.secret ? ` (my key is ${extra.secret})` : '');
      const h = { ...auth, 'x-session-id': `conv-${c}` };
      const first = await post(`${server.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 16, temperature: 1, seed: c }, h);
      if (first.status !== 200) throw new Error(`chat answered ${first.status}: ${first.text}`);
      const answer = first.json.choices[0].message.content as string;
      const feedback = likes.test(answer) ? 'I love it, thanks!' : wish;
      const second = await post(`${server.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 4, temperature: 1 }, { ...h, 'x-session-done': '1' });
      if (second.status !== 200) throw new Error(`chat answered ${second.status}: ${second.text}`);
    },
    async learn() { while (await judge.tick() > 0) { /* judge everything due */ } return trainer.tick(); },
    stop,
    async close() { await stop(); t.cleanup(); },
  };
}
