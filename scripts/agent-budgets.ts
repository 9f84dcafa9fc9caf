// What the GUI and SWE environments cost a small model's context: for one generated task of each GUI
// page, the opening prompt (chat template, tool listing, goal, page) and each observation of its
// scripted solution, in the model's tokens, with the full tree and with the budget `agent train` sets
// for the model's context; and the SWE openings, full and compact.
// Usage: node scripts/agent-budgets.ts [MODEL_DIR] (default ~/.cache/openclaw-rl/models/stories260k-chat)
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { GuiEnv, SharedBrowser } from '../src/env/gui.ts';
import { makeGuiTasks, findRef } from '../src/env/gui-tasks.ts';
import { SweEnv } from '../src/env/swe.ts';
import { makeSweTasks } from '../src/env/swe-tasks.ts';
import { ChatTokenizer } from '../src/engine/embedded/tokenizer.ts';
import { headMessages } from '../src/agent/protocol.ts';
import { observationBudget } from '../src/env/budget.ts';

const dir = process.argv[2] ?? join(homedir(), '.cache/openclaw-rl/models/stories260k-chat');
const tok = ChatTokenizer.load(dir);
const context = Number((JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { max_position_embeddings: number }).max_position_embeddings);
const countTokens = (s: string) => tok.encode(s, false).length;
const opening = (r: { system: string; user: string; tools: never[] | object[] }) => tok.encodeChat(headMessages(r.system, r.user), { tools: r.tools as never }).length;
console.log(`model ${dir}: context ${context}, observation budget ${observationBudget(context)} tokens`);

const browser = new SharedBrowser(500);
const seen = new Set<string>();
for (const task of makeGuiTasks('train', 80)) {
  const page = task.page.split('?')[0];
  if (seen.has(page)) continue;
  seen.add(page);
  const row: string[] = [page];
  for (const budget of [null, observationBudget(context)]) {
    const env = new GuiEnv(browser, { screenshots: 'off', observationTokens: budget, countTokens });
    try {
      const r = await env.reset(task);
      const texts = [`${r.system}\n${r.user}`];
      const obs: number[] = [];
      for (const s of task.solution!) {
        const ref = texts.toReversed().map((t) => findRef(t, s.role, s.name)).find(Boolean);
        const o = await env.execTool({ name: s.action, arguments: { ref, text: s.text, option: s.option } });
        texts.push(o.content);
        obs.push(countTokens(o.content));
      }
      const solved = (await env.evaluate({ finalMessage: '', toolCalls: 0 })).success;
      row.push(`${env.compactForm ? 'compact' : 'full'}: opening ${opening(r)}, observations ${obs.join('/')}, solved ${solved}`);
    } finally { await env.close(); }
  }
  console.log(row.join(' | '));
}
await browser.close();

const full: number[] = [], compact: number[] = [];
for (const task of makeSweTasks('train', 13)) {
  for (const [list, ctx] of [[full, null], [compact, context]] as const) {
    const env = new SweEnv({ contextTokens: ctx, countTokens });
    try { list.push(opening(await env.reset(task))); } finally { await env.close(); }
  }
}
console.log(`swe openings (13 tasks): full ${Math.min(...full)}–${Math.max(...full)}, with the budget ${Math.min(...compact)}–${Math.max(...compact)} tokens`);
