// The tokenizer thread behind PromptTokenizer (tokenize-worker.ts): loads the model folder's
// tokenizer once and answers {id, messages, opts} with {id, ids} or {id, error}.
import { parentPort, workerData } from 'node:worker_threads';
import { ChatTokenizer } from '../engine/embedded/tokenizer.ts';

const tokenizer = ChatTokenizer.load((workerData as { dir: string }).dir);
parentPort!.on('message', (m: { id: number; messages: Parameters<ChatTokenizer['encodeChat']>[0]; opts: Parameters<ChatTokenizer['encodeChat']>[1] }) => {
  try {
    parentPort!.postMessage({ id: m.id, ids: tokenizer.encodeChat(m.messages, m.opts) });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).message });
  }
});
