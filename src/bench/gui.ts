// `openclaw-rl bench gui`: what parallel GUI episodes cost. N episodes run at once with their
// scripted correct actions, either as N contexts of one shared Chromium (what the GUI environment
// does) or as N separate Chromium processes; reported: the extra memory of the browser process trees
// (PSS and RSS at the peak, over the idle baseline), wall time, and whether every episode passed.
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { GuiEnv, SharedBrowser } from '../env/gui.ts';
import { makeGuiTasks, findRefOrThrow, type GuiTask } from '../env/gui-tasks.ts';
import { treeMemory } from './process-memory.ts';

export interface GuiBenchRow { mode: 'contexts' | 'processes'; episodes: number; passed: number; extraPssMiB: number; extraRssMiB: number; processes: number; wallMs: number }

/** One episode played by its scripted solution; returns the evaluation and the last screenshot. */
async function solve(env: GuiEnv, task: GuiTask): Promise<{ success: boolean; shot: string | null }> {
  let tree = (await env.reset(task)).user;
  for (const s of task.solution!) {
    const obs = await env.execTool({ name: s.action, arguments: { ref: findRefOrThrow(tree, s.role, s.name), ...(s.text !== undefined ? { text: s.text } : {}), ...(s.option !== undefined ? { option: s.option } : {}) } });
    tree = obs.content;
  }
  return { success: (await env.evaluate({ finalMessage: '', toolCalls: 0 })).success, shot: env.screenshots.at(-1) ?? null };
}

export async function benchGui(o: { episodes: number; modes: GuiBenchRow['mode'][]; screenshotsDir?: string; log: (l: string) => void }): Promise<GuiBenchRow[]> {
  const rows: GuiBenchRow[] = [];
  for (const mode of o.modes) {
    const base = treeMemory();
    const browsers = mode === 'contexts' ? [new SharedBrowser(100)] : Array.from({ length: o.episodes }, () => new SharedBrowser(100));
    const tasks = makeGuiTasks('train', o.episodes, 200);
    const envs = tasks.map((_, i) => new GuiEnv(browsers[i % browsers.length], { screenshots: 'off', actionTimeoutMs: 30_000 }));
    let peakPss = 0, peakRss = 0, processes = 0;
    const sample = () => { const m = treeMemory(); peakPss = Math.max(peakPss, m.pssBytes); peakRss = Math.max(peakRss, m.rssBytes); processes = Math.max(processes, m.processes); };
    const timer = setInterval(sample, 250);
    const t0 = performance.now();
    try {
      const results = await Promise.all(envs.map((e, i) => solve(e, tasks[i])));
      sample();
      const row: GuiBenchRow = {
        mode, episodes: o.episodes, passed: results.filter((r) => r.success).length, extraPssMiB: (peakPss - base.pssBytes) / 2 ** 20,
        extraRssMiB: (peakRss - base.rssBytes) / 2 ** 20, processes, wallMs: performance.now() - t0,
      };
      rows.push(row);
      o.log(`bench gui: ${mode}: ${row.passed}/${row.episodes} passed, +${row.extraPssMiB.toFixed(0)} MiB PSS (+${row.extraRssMiB.toFixed(0)} MiB RSS), ${processes} processes, ${(row.wallMs / 1000).toFixed(1)} s`);
    } finally {
      clearInterval(timer);
      await Promise.all(envs.map((e) => e.close()));
      await Promise.all(browsers.map((b) => b.close()));
    }
  }
  if (o.screenshotsDir) {
    // one finished episode of each page, as pictures for the docs
    mkdirSync(o.screenshotsDir, { recursive: true });
    const browser = new SharedBrowser(100);
    try {
      const seen = new Set<string>();
      for (const task of makeGuiTasks('train', 40)) {
        const page = task.page.split('?')[0].replace('.html', '');
        if (seen.has(page)) continue;
        seen.add(page);
        const env = new GuiEnv(browser, { screenshots: 'temp', actionTimeoutMs: 30_000 });
        try {
          const r = await solve(env, task);
          if (r.shot) copyFileSync(r.shot, join(o.screenshotsDir, `gui-${page}.png`));
        } finally { await env.close(); }
      }
      o.log(`bench gui: screenshots of ${[...seen].join(', ')} in ${o.screenshotsDir}`);
    } finally { await browser.close(); }
  }
  return rows;
}
