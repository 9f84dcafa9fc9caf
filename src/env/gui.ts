// The GUI environment: a real headless browser — Debian's Chromium driven by playwright-core through
// its `executablePath`, no browser download — on local task pages (forms, lists, settings, tables).
// One Chromium process is shared by a pool's environments; each episode gets its own browser context
// (own cookies, storage and renderer), so episodes run in parallel without seeing each other. The
// pages are served from a folder by request interception under a reserved origin; every other
// request is aborted, so a page has no network. Observation: the page's accessibility tree as text
// (Playwright's aria snapshot, with element references like [ref=e6]) and a screenshot stored as a
// file reference. Actions by reference: click, type, select, scroll, done; at most 15 steps. Reward:
// the task's checker on the page state, +1 passed / −1 not. With a token budget per observation (set
// from the served model's context and counted with its tokenizer), a page whose full tree does not fit
// is shown in the compact form of gui-observe.ts (in the system message, the goal alone as the user
// message, the tools listed without descriptions), and later observations send only what changed: so
// a 512-token model gets several steps.
import { readFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, normalize, extname } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { parseAria, compactLines, diffLines, fitLines } from './gui-observe.ts';
import { fitText, roughTokens, observationBudget, type ModelBudget } from './budget.ts';
import { checkState, validateGuiTask, DEFAULT_PAGES_DIR, type GuiTask } from './gui-tasks.ts';
import { EnvRequestError, type Environment, type EnvFactory, type ResetResult, type Task, type ToolCallRequest, type Observation, type EvaluateRequest, type Evaluation, type ToolSpec } from './types.ts';

/** The origin the task pages are served under (".invalid" never resolves, so nothing can leak out). */
export const PAGE_ORIGIN = 'http://tasks.openclaw-rl.invalid';

export const CHROMIUM_PATH = process.env.OPENCLAW_RL_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-extensions', '--mute-audio'];

export interface GuiEnvOptions {
  maxSteps: number;
  maxObservationChars: number;
  /** per-action time limit (an element that never becomes clickable, a select without that option) */
  actionTimeoutMs: number;
  /** screenshots after each step: a folder to keep them in, 'temp' (removed when the episode ends) or 'off' */
  screenshots: string;
  viewport: { width: number; height: number };
  pagesDir: string;
  system: string;
  /**
   * how the page is written: 'full' (the aria snapshot), 'compact' (interactive elements, short
   * labels, changes only after an action) or 'auto' (full when the first page fits
   * `observationTokens`, else compact)
   */
  observation: 'full' | 'compact' | 'auto';
  /** at most this many tokens per observation (null: no token budget, `maxObservationChars` only) */
  observationTokens: number | null;
  /** the served model's token count of a text (default: about four characters a token) */
  countTokens: (text: string) => number;
  /** compact form: labels and values cut to this many characters */
  maxLabel: number;
  /** compact form: text before the page in the system message (none by default: every token counts in a small context) */
  compactSystem: string;
}

export const GUI_DEFAULTS: GuiEnvOptions = {
  maxSteps: 15, maxObservationChars: 3000, actionTimeoutMs: 5000, screenshots: 'temp', viewport: { width: 800, height: 600 },
  pagesDir: DEFAULT_PAGES_DIR,
  system: 'You use a web page through its accessibility tree. Elements have references like [ref=e6]. Act with one tool ' +
    'call per turn: click, type, select or scroll by ref; call done when the task is finished.',
  observation: 'auto', observationTokens: null, countTokens: roughTokens, maxLabel: 24,
  compactSystem: '',
};

const refParam = { ref: { type: 'string', description: 'element reference from the accessibility tree, e.g. e6' } };
export const GUI_TOOLS: ToolSpec[] = [
  { type: 'function', function: { name: 'click', description: 'click an element', parameters: { type: 'object', properties: refParam, required: ['ref'] } } },
  { type: 'function', function: { name: 'type', description: 'replace the text of a text box', parameters: { type: 'object', properties: { ...refParam, text: { type: 'string' } }, required: ['ref', 'text'] } } },
  { type: 'function', function: { name: 'select', description: 'choose an option of a drop-down by its label', parameters: { type: 'object', properties: { ...refParam, option: { type: 'string' } }, required: ['ref', 'option'] } } },
  { type: 'function', function: { name: 'scroll', description: 'scroll the page up or down, or to an element', parameters: { type: 'object', properties: { direction: { type: 'string', enum: ['up', 'down'] }, ref: refParam.ref } } } },
  { type: 'function', function: { name: 'done', description: 'the task is finished', parameters: { type: 'object', properties: {} } } },
];

/** The actions listed without descriptions and without scroll (still accepted), for small contexts. */
export const GUI_TOOLS_COMPACT: ToolSpec[] = GUI_TOOLS.filter((t) => t.function.name !== 'scroll')
  .map((t) => ({ type: 'function', function: { name: t.function.name, parameters: t.function.parameters } }));

export type BrowserSupport = { ok: true } | { ok: false; reason: string };

/** Whether the GUI environment can run here (Chromium present, playwright-core installed). */
export async function browserSupport(): Promise<BrowserSupport> {
  if (!existsSync(CHROMIUM_PATH)) return { ok: false, reason: `no Chromium at ${CHROMIUM_PATH}: apt-get install chromium, or set OPENCLAW_RL_CHROMIUM` };
  try { await import('playwright-core'); } catch { return { ok: false, reason: 'the playwright-core package is not installed' }; }
  return { ok: true };
}

/**
 * One Chromium process shared by environments: launched on first use, closed when no context has
 * been open for `idleMs` (so an idle process does not hold a browser).
 */
export class SharedBrowser {
  private browser: Promise<Browser> | null = null;
  private users = 0;
  private idle: NodeJS.Timeout | undefined;
  readonly idleMs: number;
  constructor(idleMs = 2000) { this.idleMs = idleMs; }

  async newContext(viewport: GuiEnvOptions['viewport']): Promise<BrowserContext> {
    clearTimeout(this.idle);
    this.users++;
    try {
      this.browser ??= (async () => {
        const support = await browserSupport();
        if (!support.ok) throw new Error(`GUI environment unavailable: ${support.reason}`);
        const { chromium } = await import('playwright-core');
        return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_FLAGS, headless: true });
      })();
      const b = await this.browser;
      return await b.newContext({ viewport, javaScriptEnabled: true, serviceWorkers: 'block', acceptDownloads: false });
    } catch (e) {
      this.browser = null;
      this.release();
      throw e;
    }
  }

  release(): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users > 0) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => void this.close(), this.idleMs);
  }

  async close(): Promise<void> {
    clearTimeout(this.idle);
    const b = this.browser;
    this.browser = null;
    if (b) await (await b.catch(() => null))?.close().catch(() => {});
  }
}

const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript', '.png': 'image/png', '.svg': 'image/svg+xml' };

/** Serve the pages folder under PAGE_ORIGIN and abort every other request. */
async function servePages(context: BrowserContext, pagesDir: string): Promise<void> {
  await context.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (`${url.protocol}//${url.host}` !== PAGE_ORIGIN) return route.abort('blockedbyclient');
    const rel = normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.(\/|$))+/, '');
    const file = join(pagesDir, rel);
    if (!file.startsWith(pagesDir) || !existsSync(file) || !statSync(file).isFile()) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ status: 200, body: readFileSync(file), contentType: CONTENT_TYPES[extname(file)] ?? 'application/octet-stream' });
  });
}

/** The aria snapshot as the policy reads it: Playwright's text with the cursor hints left out. */
export function snapshotText(raw: string): string {
  return raw.split('\n').map((l) => l.replace(/ \[cursor=pointer\]/g, '')).join('\n');
}

export class GuiEnv implements Environment {
  readonly o: GuiEnvOptions;
  private readonly browser: SharedBrowser;
  private task: GuiTask | null = null;
  private context: BrowserContext | null = null;
  private page: Page | null = null;
  private steps = 0;
  private shotDir: string | null = null;
  /** the accessibility tree of the last observation (a reference not in it fails at once) */
  private lastTree = '';
  /** file references of the screenshots taken, in order */
  readonly screenshots: string[] = [];
  /** this episode's form (decided at reset) and the compact lines of the last observation */
  private compact = false;
  private lastLines: string[] = [];

  constructor(browser: SharedBrowser, o: Partial<GuiEnvOptions> = {}) { this.browser = browser; this.o = { ...GUI_DEFAULTS, ...o }; }

  async reset(task: Task): Promise<ResetResult> {
    this.task = validateGuiTask(task);
    await this.closeContext();
    this.steps = 0;
    this.screenshots.length = 0;
    this.context = await this.browser.newContext(this.o.viewport);
    await servePages(this.context, this.o.pagesDir);
    this.page = await this.context.newPage();
    this.page.setDefaultTimeout(this.o.actionTimeoutMs);
    this.page.on('dialog', (d) => void d.dismiss().catch(() => {}));
    await this.page.goto(`${PAGE_ORIGIN}/${this.task.page}`, { timeout: 15_000 });
    if (this.o.screenshots !== 'off') this.shotDir ??= this.o.screenshots === 'temp' ? mkdtempSync(join(tmpdir(), 'openclaw-rl-gui-')) : this.o.screenshots;
    this.compact = this.o.observation === 'compact';
    const page = await this.capture();
    if (this.o.observation === 'auto' && this.o.observationTokens !== null) this.compact = this.o.countTokens(this.fullText(page)) > this.o.observationTokens;
    const first = this.render(page, true);
    // the compact form puts the page in the system message and leaves the goal alone as the request:
    // a small chat model answers a short request with a tool call, and a long multi-line user message
    // in a judge's verdict format (stories260k-chat: 0 of 48 samples started a tool call with the page
    // in the user message, 11–16 of 48 with it in the system message)
    if (this.compact) return { system: [this.o.compactSystem, first].filter(Boolean).join('\n'), user: this.task.goal, tools: GUI_TOOLS_COMPACT, maxToolCalls: this.o.maxSteps };
    return { system: this.o.system, user: `${this.task.goal}\n\n${first}`, tools: GUI_TOOLS, maxToolCalls: this.o.maxSteps };
  }

  /** Whether this episode writes the page in the compact form. */
  get compactForm(): boolean { return this.compact; }

  /**
   * The page as text: title and accessibility tree (full form: with the screenshot's file reference;
   * compact form: the changes since the last observation unless `whole`, or the whole page when that is shorter).
   */
  async observe(whole = false): Promise<string> {
    return this.render(await this.capture(), whole);
  }

  /** The page's accessibility tree and title, and a screenshot when they are kept. */
  private async capture(): Promise<{ raw: string; title: string; shot: string }> {
    const page = this.page!;
    const raw = snapshotText(await page.ariaSnapshot({ mode: 'ai', timeout: 10_000 }));
    this.lastTree = raw;
    let shot = '';
    if (this.shotDir) {
      const path = join(this.shotDir, `${this.task!.key.replace(/[^\w.-]/g, '_')}-step${this.steps}.png`);
      await page.screenshot({ path, timeout: 10_000 });
      this.screenshots.push(path);
      shot = `\n[screenshot: ${path}]`;
    }
    return { raw, title: await page.title(), shot };
  }

  /** The full form: title, the aria snapshot (cut at `maxObservationChars`), the screenshot's reference. */
  private fullText({ raw, title, shot }: { raw: string; title: string; shot: string }): string {
    const tree = raw.length > this.o.maxObservationChars ? `${raw.slice(0, this.o.maxObservationChars)}\n… (tree cut at ${this.o.maxObservationChars} characters)` : raw;
    return `Page: ${title}\n${tree}${shot}`;
  }

  private render({ raw, title, shot }: { raw: string; title: string; shot: string }, whole: boolean): string {
    const budget = this.o.observationTokens ?? Number.POSITIVE_INFINITY;
    const count = this.o.countTokens;
    if (!this.compact) return this.o.observationTokens === null ? this.fullText({ raw, title, shot }) : fitText(this.fullText({ raw, title, shot }), budget, count);
    // compact: no title (the goal says what the page is for), the lines, or only what changed
    const lines = compactLines(parseAria(raw), { maxLabel: this.o.maxLabel, title });
    const before = this.lastLines;
    this.lastLines = lines;
    const full = fitLines('', lines, budget, count);
    if (whole) return full;
    const d = diffLines(before, lines);
    if (!d) return 'No change.';
    const changes = fitLines('', d, budget, count);
    return count(changes) < count(full) ? changes : full;
  }

  async execTool(call: ToolCallRequest): Promise<Observation> {
    if (!this.page) throw new EnvRequestError('exec_tool before reset');
    this.steps++;
    const budgetDone = this.steps >= this.o.maxSteps;
    const a = call.arguments;
    const ref = typeof a.ref === 'string' ? a.ref.replace(/^\[?ref=/, '').replace(/\]$/, '') : null;
    const fail = (msg: string) => ({ content: `Error: ${msg}`, error: true, done: budgetDone });
    if (call.name === 'done') return { content: 'Done.', error: false, done: true };
    const needsRef = call.name === 'click' || call.name === 'type' || call.name === 'select';
    if (!GUI_TOOLS.some((t) => t.function.name === call.name)) return fail(`unknown action '${call.name}' (actions: click, type, select, scroll, done)`);
    if (needsRef && (!ref || !/^[a-z0-9]+$/i.test(ref))) return fail(`${call.name} needs {"ref": "e…"} from the accessibility tree`);
    if (ref && !this.lastTree.includes(`[ref=${ref}]`)) return fail(`no element [ref=${ref}] on the page; use a reference from the latest accessibility tree`);
    try {
      const el = ref ? this.page.getByRef(ref) : null;
      if (call.name === 'click') await el!.click();
      else if (call.name === 'type') {
        if (typeof a.text !== 'string') return fail('type needs {"ref": …, "text": "…"}');
        await el!.fill(a.text);
      } else if (call.name === 'select') {
        if (typeof a.option !== 'string') return fail('select needs {"ref": …, "option": "…"}');
        await el!.selectOption({ label: a.option }).catch(() => el!.selectOption(a.option as string));
      } else if (call.name === 'scroll') {
        if (el) await el.scrollIntoViewIfNeeded();
        else await this.page.mouse.wheel(0, a.direction === 'up' ? -400 : 400);
      }
    } catch (e) {
      const msg = (e as Error).message.split('\n')[0].replace(/^[\w.]+: /, '');
      return { content: `Error: ${call.name} ${ref ?? ''} failed: ${msg}\n\n${await this.observe()}`, error: true, done: budgetDone };
    }
    return { content: await this.observe(), error: false, done: budgetDone };
  }

  /** The page's task state (what the checker reads). */
  async state(): Promise<unknown> {
    return this.page!.evaluate('window.taskState ?? null');
  }

  async evaluate(_req: EvaluateRequest): Promise<Evaluation> {
    if (!this.task || !this.page) throw new EnvRequestError('evaluate before reset');
    const verdict = checkState(this.task, await this.state());
    return { score: verdict.ok ? 1 : -1, success: verdict.ok, passed: verdict.ok ? 1 : 0, total: 1, detail: verdict.detail };
  }

  private async closeContext(): Promise<void> {
    const ctx = this.context;
    this.context = null;
    this.page = null;
    if (ctx) { await ctx.close().catch(() => {}); this.browser.release(); }
  }

  async close(): Promise<void> {
    await this.closeContext();
    if (this.shotDir && this.o.screenshots === 'temp') rmSync(this.shotDir, { recursive: true, force: true });
    this.shotDir = null;
  }
}

/** The GUI environment; with the served model's budget, observations fit its context (compact form when needed). */
export function guiFactory(o: Partial<GuiEnvOptions> = {}, browser = new SharedBrowser(), model?: ModelBudget): EnvFactory & { browser: SharedBrowser } {
  const sized = model ? { observationTokens: observationBudget(model.contextTokens), countTokens: model.countTokens, ...o } : o;
  return { name: 'gui', browser, create: () => new GuiEnv(browser, sized) };
}
