// The dashboard in a real headless Chromium (Debian's chromium through playwright-core; no browser
// download) against a server that has trained on stories260K: the key prompt, a refused key, the
// curves, a turn with its votes and hint, live updates after a new step, a rollback from the page,
// and no secret that redaction removed. Set OPENCLAW_RL_SCREENSHOT=FILE to keep the screenshot
// (docs/dashboard.png is made this way).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startLearningServer } from '../helpers/learning-server.ts';
import { tempDir } from '../helpers/models.ts';
import { Evaluator, parseEvalFile } from '../../src/trainer/evaluation.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';

/** the page's DOM, inside page.waitForFunction callbacks (this project's types have no DOM library) */
declare const document: { querySelectorAll(selector: string): NodeListOf; getElementById(id: string): { textContent: string | null } | null };
type NodeListOf = ArrayLike<{ textContent: string | null }> & Iterable<{ textContent: string | null }>;

const CHROMIUM = process.env.OPENCLAW_RL_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const KEY = 'browser-test-key-9876543210';
const SECRET = 'sk-proj-SECRETSECRET0123456789';

test('the dashboard in headless Chromium: key prompt, refused key, curves, a judged turn with votes and hint, live update, rollback, no secret', { timeout: 600_000 }, async (t) => {
  if (!existsSync(CHROMIUM)) { t.skip(`no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium with apt-get; set OPENCLAW_RL_CHROMIUM to use another`); return; }
  // a user who likes stories about a girl: common enough in stories260K for rewards of both signs
  const s = await startLearningServer({ apiKey: KEY, method: 'combine', klCoef: 0.05, likes: /\b(she|her|girl)\b/i, wish: 'No, I wanted a story about a girl.' });
  const shots = tempDir('ocrl-shot-');
  let browser: Browser | null = null;
  try {
    const evaluator = new Evaluator(s.engine, new LexicalJudge(), parseEvalFile([
      '{"prompt": "Once upon a time, a little", "criteria": "a story about a girl", "satisfied": {"includes": ["she", "her", "girl"]}}',
      '{"prompt": "Sam and Max", "satisfied": {"includes": ["she", "her", "girl"]}}',
    ].join('\n')), { every: 1, samples: 2, maxTokens: 16 }, (line) => s.tracking.metricsLog.eval(line));
    s.tracking.attach(s.trainer, evaluator);
    for (let c = 0; c < 24; c++) await s.converse(c, c === 2 ? { secret: SECRET } : {});
    assert.equal(await s.learn(), 6);
    await evaluator.idle();

    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
    const context = await browser.newContext({ viewport: { width: 1360, height: 1500 } });
    const page = await context.newPage();
    page.on('dialog', (d) => void d.accept());

    // no key: the login prompt, no data
    await page.goto(`${s.url}/`);
    await page.waitForSelector('#login-form', { state: 'visible' });
    assert.equal(await page.isVisible('#app'), false);
    assert.match(await page.textContent('#login-error') ?? '', /needs an API key/);

    // a wrong key is refused
    await page.fill('#key', 'not-the-key');
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => /refused/.test(document.getElementById('login-error')!.textContent ?? ''));
    assert.equal(await page.isVisible('#app'), false);

    // the right key: overview, curves, turns
    await page.fill('#key', KEY);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#app', { state: 'visible' });
    await page.waitForSelector('[data-chart="rewardMean"] polyline', { state: 'attached' });
    const overview = await page.textContent('#overview') ?? '';
    assert.match(overview, /policy version\s*6/);
    assert.match(overview, /combine/);
    assert.match(overview, /lexical: 24 judged/);
    for (const chart of ['rewardMean', 'loss', 'kl', 'clipFraction', 'teacherGap']) {
      assert.equal(await page.locator(`[data-chart="${chart}"] circle[r="2"]`).count(), 6, `${chart}: one point per step`);
    }
    assert.ok(await page.locator('[data-chart="rewardMean"] circle[r="3.5"]').count() >= 2, 'held-out evaluation points (evaluations due while one runs are merged)');
    // a judged turn with its votes and hint
    const negative = page.locator('.turn', { has: page.locator('.hint') }).first();
    await negative.waitFor();
    const text = await negative.textContent() ?? '';
    assert.match(text, /hint: .*girl/);
    assert.match(text, /prm -1/);
    assert.match(text, /sampled with v0/);
    assert.match(text, /by step \d → v\d/);
    assert.match(text, /advantage mean/);
    // the secret the store redacts is nowhere on the page
    // the sessions table; a click filters the turns to the session, whose prompt held the secret, redacted
    await page.click('#sessions-box summary');
    assert.equal(await page.locator('#sessions-table tbody tr').count(), 24);
    await page.click('#sessions-table button[data-session="conv-2"]');
    await page.waitForFunction(() => [...document.querySelectorAll('.turn')].length === 2 && [...document.querySelectorAll('.turn')].every((t) => t.textContent!.includes('conv-2')));
    assert.match(await page.textContent('#turns') ?? '', /\(my key is \[REDACTED\]\)/);
    assert.ok(!(await page.content()).includes(SECRET));
    assert.ok(!(await page.content()).includes('SECRETSECRET'));
    await page.selectOption('#f-reward', '1');
    await page.fill('#f-session', '');
    await page.waitForFunction(() => document.querySelectorAll('.turn').length > 0 && [...document.querySelectorAll('.turn')].every((t) => /reward \+1/.test(t.textContent!)));
    await page.selectOption('#f-reward', '');
    // the key is kept: a reload opens the dashboard without asking
    await page.reload();
    await page.waitForSelector('#app', { state: 'visible' });
    assert.equal(await page.isVisible('#login'), false);
    await page.waitForSelector('[data-chart="rewardMean"] polyline', { state: 'attached' });
    await page.screenshot({ path: process.env.OPENCLAW_RL_SCREENSHOT ?? join(shots.dir, 'dashboard.png') });
    const png = readFileSync(process.env.OPENCLAW_RL_SCREENSHOT ?? join(shots.dir, 'dashboard.png'));
    assert.equal(png.subarray(1, 4).toString(), 'PNG');

    // a new step appears without a reload
    for (let c = 24; c < 28; c++) await s.converse(c);
    assert.equal(await s.learn(), 1);
    await page.waitForFunction(() => document.querySelectorAll('[data-chart="rewardMean"] circle[r="2"]').length === 7, null, { timeout: 30_000 });
    assert.match(await page.textContent('#overview') ?? '', /policy version\s*7/);

    // the turns a version was trained on
    await page.click('button[data-samples="2"]');
    await page.waitForSelector('tr.samples');
    assert.match(await page.textContent('tr.samples') ?? '', /trained on 4 turns: #\d+ \(conv-\d+, reward [+-]1\)/);

    // roll back to version 3 from the page
    await page.click('button[data-version="3"]');
    await page.waitForFunction(() => /Rolled back to version 3: now serving version 8/.test(document.getElementById('rollback-msg')!.textContent ?? ''));
    await page.waitForFunction(() => /policy version\s*8/.test(document.getElementById('overview')!.textContent ?? ''));
    assert.equal(s.trainer.version, 8);

    // forgetting the key brings the prompt back
    await page.click('#logout');
    await page.waitForSelector('#login-form', { state: 'visible' });
    await evaluator.close();
  } finally {
    await browser?.close();
    await s.close();
    shots.cleanup();
  }
});
