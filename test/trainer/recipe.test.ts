// The defaults that follow the model: combine + top-K OPD (the live policy as teacher) + the self judge (the exact KL at β 0.2 and the
// entropy guard) for a chat model on the embedded engine, binary + the lexical judge (KL k3 at β 0.3) otherwise — as a table, and through the real `serve`,
// `bench personalize` and `demo`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { recipeFor, RECIPE, CHAT_ENTROPY_GUARD, CHAT_LEARNING_RATE, CHAT_OPD_TEACHER, CHAT_KL_COEF, CHAT_BINARY_KL_COEF, CHAT_LOOP_GUARD, CHAT_REPEAT_GUARD, CHAT_LIKELIHOOD_GUARD, CHAT_OPD_WEIGHT, CHAT_ANCHOR_ANSWERS, CHAT_TAIL_GUARD, klCoefOf, type ModelTraits, CHAT_REWARD_BASELINE, CHAT_REWARD_KL_COEF, CHAT_DISTILL_UNTIL_MET, CHAT_OPD_SETTLE, settleOf, rewardKlCoefOf, distillUntilMetOf } from '../../src/trainer/recipe.ts';
import { SELF_JUDGE_VOTES, JUDGE_DEFAULTS, defaultVotes } from '../../src/judge/config.ts';
import { chatTemplateOf } from '../../src/engine/embedded/tokenizer.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import { STORIES, tempDir, tinyModel } from '../helpers/models.ts';

const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));
const tmp = tempDir('ocrl-recipe-');
after(tmp.cleanup);

test('judge votes follow the judge: the self judge votes more (local decode), an LLM endpoint keeps the default', () => {
  assert.deepEqual([defaultVotes('self'), defaultVotes('llm'), defaultVotes('lexical')], [SELF_JUDGE_VOTES, JUDGE_DEFAULTS.votes, JUDGE_DEFAULTS.votes]);
  assert.ok(SELF_JUDGE_VOTES > JUDGE_DEFAULTS.votes);
});

test('recipeFor: the table', () => {
  const plain = { method: RECIPE.method, opdMode: 'token', judge: 'lexical', klCoef: RECIPE.klCoef, klEstimator: RECIPE.klEstimator, entropyGuard: 0, learningRate: RECIPE.learningRate, opdTeacher: 'base' };
  const rows: [ModelTraits, { method: string; opdMode: string; judge: string; klCoef: number; klEstimator: string; entropyGuard: number; learningRate: number; opdTeacher: string }][] = [
    [{ chatTemplate: true, embedded: true }, { method: 'combine', opdMode: 'topk', judge: 'self', klCoef: CHAT_KL_COEF, klEstimator: 'full', entropyGuard: CHAT_ENTROPY_GUARD, learningRate: CHAT_LEARNING_RATE, opdTeacher: CHAT_OPD_TEACHER }],
    [{ chatTemplate: false, embedded: true }, plain],
    [{ chatTemplate: true, embedded: false }, plain],
    [{ chatTemplate: false, embedded: false }, plain],
  ];
  for (const [traits, want] of rows) {
    const r = recipeFor(traits);
    assert.deepEqual({ method: r.method, opdMode: r.opdMode, judge: r.judge, klCoef: r.klCoef, klEstimator: r.klEstimator, entropyGuard: r.entropyGuard, learningRate: r.learningRate, opdTeacher: r.opdTeacher }, want, JSON.stringify(traits));
    assert.ok(r.reason.length > 0);
  }
  // binary keeps the smaller β in the chat recipe (no OPD term to anchor); elsewhere one β for every method
  const chat = recipeFor({ chatTemplate: true, embedded: true }), plainRecipe = recipeFor({ chatTemplate: false, embedded: true });
  assert.deepEqual(['binary', 'opd', 'combine'].map((m) => klCoefOf(chat, m as never)), [CHAT_BINARY_KL_COEF, CHAT_KL_COEF, CHAT_KL_COEF]);
  assert.deepEqual(['binary', 'opd', 'combine'].map((m) => klCoefOf(plainRecipe, m as never)), [RECIPE.klCoef, RECIPE.klCoef, RECIPE.klCoef]);
  assert.match(recipeFor({ chatTemplate: false, embedded: true }).reason, /no chat template/);
  assert.match(recipeFor({ chatTemplate: true, embedded: false }).reason, /remote engine/);
  // β on reward-trained answers and distillation until met: the chat recipe's, nothing elsewhere
  assert.deepEqual(['binary', 'opd', 'combine'].map((m) => settleOf(chat, m as never)), [0, CHAT_OPD_SETTLE, 0], 'the learning rate settles under OPD alone on the chat model');
  assert.deepEqual(['binary', 'opd', 'combine'].map((m) => settleOf(plainRecipe, m as never)), [0, 0, 0]);
  assert.deepEqual([chat.rewardKlCoef, chat.distillUntilMet, plainRecipe.rewardKlCoef, plainRecipe.distillUntilMet, recipeFor({ chatTemplate: true, embedded: false }).rewardKlCoef], [CHAT_REWARD_KL_COEF, CHAT_DISTILL_UNTIL_MET, null, false, null]);
});

test('rewardKlCoefOf and distillUntilMetOf: a flag wins; a β the user sets holds for every answer', () => {
  const chat = recipeFor({ chatTemplate: true, embedded: true }), plain = recipeFor({ chatTemplate: false, embedded: true });
  const rows: [typeof chat, { klCoef?: number; rewardKlCoef?: number }, number | null][] = [
    [chat, {}, CHAT_REWARD_KL_COEF],
    [chat, { rewardKlCoef: 0.3 }, 0.3],
    [chat, { klCoef: 0.5 }, null],
    [chat, { klCoef: 0.5, rewardKlCoef: 0.05 }, 0.05],
    [plain, {}, null],
    [plain, { rewardKlCoef: 0 }, 0],
  ];
  for (const [r, flags, want] of rows) assert.equal(rewardKlCoefOf(r, flags), want, JSON.stringify(flags));
  const switches: [typeof chat, { on?: boolean; off?: boolean }, boolean][] = [[chat, {}, true], [chat, { off: true }, false], [plain, {}, false], [plain, { on: true }, true], [chat, { on: false, off: false }, true]];
  for (const [r, flags, want] of switches) assert.equal(distillUntilMetOf(r, flags), want, JSON.stringify(flags));
});

const TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

test('chatTemplateOf: tokenizer_config.json (string or named list), chat_template.jinja, or none', () => {
  assert.equal(chatTemplateOf(STORIES), null);
  const a = join(tmp.dir, 'a'), b = join(tmp.dir, 'b'), c = join(tmp.dir, 'c');
  for (const d of [a, b, c]) mkdirSync(d);
  writeFileSync(join(a, 'tokenizer_config.json'), JSON.stringify({ chat_template: TEMPLATE }));
  writeFileSync(join(b, 'tokenizer_config.json'), JSON.stringify({ chat_template: [{ name: 'tool_use', template: 'T' }, { name: 'default', template: 'D' }] }));
  writeFileSync(join(c, 'chat_template.jinja'), 'J');
  assert.equal(chatTemplateOf(a), TEMPLATE);
  assert.equal(chatTemplateOf(b), 'D');
  assert.equal(chatTemplateOf(c), 'J');
});

/** Start `serve` on a model until it says it is serving; return its log. */
function serveLog(model: string, args: string[]): Promise<string> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--model', model, '--port', '0', '--data-dir', join(tmp.dir, `data-${Math.random()}`), ...args],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, OPENCLAW_RL_JUDGE: '', OPENCLAW_RL_METHOD: '' } });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`serve did not start:\n${log}`)); }, 60_000);
    proc.stderr!.on('data', (d) => {
      log += d;
      if (/openclaw-rl: serving/.test(log)) { clearTimeout(timer); proc.kill('SIGTERM'); }
    });
    proc.on('exit', () => { clearTimeout(timer); resolve(log); });
  });
}

test('serve picks the recipe from the model; flags win', { timeout: 120_000 }, async () => {
  // stories260K: no chat template
  const plain = await serveLog(STORIES, []);
  assert.match(plain, /default recipe for this model: no chat template/);
  assert.match(plain, /judge: lexical, learning: binary/);
  // a tiny model with stories260K's tokenizer and a chat template
  const chat = tinyModel(join(tmp.dir, 'chat'), tinyConfig('llama'));
  writeFileSync(join(chat, 'chat_template.jinja'), TEMPLATE);
  const chatLog = await serveLog(chat, []);
  assert.match(chatLog, /default recipe for this model: a chat model on the embedded engine/);
  assert.match(chatLog, new RegExp(`judge: self \\(${SELF_JUDGE_VOTES} votes\\), learning: combine`));
  assert.match(chatLog, new RegExp(`KL to base full at β ${CHAT_KL_COEF} \\(${CHAT_REWARD_KL_COEF} on answers trained by their reward alone or approved\\), entropy guard λ ${CHAT_ENTROPY_GUARD}, OPD teacher ${CHAT_OPD_TEACHER} \\(w_opd ${CHAT_OPD_WEIGHT}\\), each answer distilled until it meets the hint, loop guard ${CHAT_LOOP_GUARD}.*${CHAT_REPEAT_GUARD === 'off' ? '' : `, repeat guard ${CHAT_REPEAT_GUARD}`}, ${CHAT_ANCHOR_ANSWERS} anchor answers per stale batch, tail guard ${CHAT_TAIL_GUARD}, reward baseline ${CHAT_REWARD_BASELINE}`));
  const flagged = await serveLog(chat, ['--method', 'binary', '--judge', 'lexical', '--opd-mode', 'token', '--kl-coef', '0.3', '--kl-estimator', 'k3', '--entropy-guard', '0', '--learning-rate', '3e-3', '--opd-teacher', 'base', '--loop-guard', 'off', '--likelihood-guard', 'off', '--repeat-guard', 'off', '--anchor-answers', '0', '--tail-guard', '0', '--opd-weight', '1', '--reward-baseline', 'recent', '--reward-kl-coef', '0.3', '--no-distill-until-met', '--settle', '0']);
  assert.doesNotMatch(flagged, /default recipe for this model/);
  assert.match(flagged, /judge: lexical, learning: binary \(version \d+\), KL to base k3 at β 0\.3/);
  assert.doesNotMatch(flagged, /entropy guard|loop guard|likelihood guard|repeat guard|anchor answers|tail guard|reward alone|until it meets|settling/, 'λ 0, the guards and the anchors off, one β and full distillation are not logged');
  assert.match(await serveLog(chat, ['--kl-coef', '0.4']), /learning: combine \(version \d+\), KL to base full at β 0\.4, entropy/, 'a β the user sets holds for every answer');
  assert.match(await serveLog(chat, ['--judge-votes', '3']), /judge: self \(3 votes\), learning: combine/, 'a flag sets the votes');
  // the training pace: on by default (no batch of lag), a number sets it, off turns it off
  assert.match(chatLog, /new turns wait \(≤ 30 s\) while the trainer is more than 0 batches behind/);
  assert.match(await serveLog(chat, ['--max-lag', '1', '--max-lag-wait-seconds', '5']), /new turns wait \(≤ 5 s\) while the trainer is more than 1 batch behind/);
  assert.doesNotMatch(await serveLog(chat, ['--max-lag', 'off']), /new turns wait/);
  // OPD alone settles its learning rate once half the answers please; combine (above) does not, a flag sets it
  assert.doesNotMatch(chatLog, /learning: combine[^\n]*settling/);
  assert.match(await serveLog(chat, ['--method', 'opd']), new RegExp(`learning: opd .*learning rate settling once ${CHAT_OPD_SETTLE * 100}% of recent answers please`));
  assert.doesNotMatch(await serveLog(chat, ['--method', 'opd', '--settle', '0']), /learning: opd[^\n]*settling/);
  assert.match(await serveLog(chat, ['--settle', '0.25']), /learning: combine .*learning rate settling once 25% of recent answers please/);
  // serving without training keeps the cheap judge
  assert.match(await serveLog(chat, ['--no-train']), /judge: lexical, learning: off/);
});

test('--distill-until-met and --no-distill-until-met together are a usage error', () => {
  for (const cmd of [['serve'], ['bench', 'personalize']]) {
    const r = spawnSync(process.execPath, [BIN, ...cmd, '--model', STORIES, '--distill-until-met', '--no-distill-until-met'], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--distill-until-met and --no-distill-until-met contradict each other/);
  }
});

test('demo with no model and no built chat model says how to get one', () => {
  const r = spawnSync(process.execPath, [BIN, 'demo'], { encoding: 'utf8', env: { ...process.env, OPENCLAW_RL_MODEL: '', OPENCLAW_RL_CACHE: join(tmp.dir, 'empty-cache') } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /no model: the demo runs on stories260k-chat once it is built .*npm run make:chat-model.*--model DIR/s);
});

test('bench personalize and demo resolve the KL term and the learning rate from the model; a flag wins', async () => {
  const { resolvePersonalize } = await import('../../src/cli/bench.ts');
  type Values = Parameters<typeof resolvePersonalize>[0];
  const chat = join(tmp.dir, 'chat-resolve');
  tinyModel(chat, tinyConfig('llama'));
  writeFileSync(join(chat, 'chat_template.jinja'), TEMPLATE);
  const none = {} as Values;
  const c = await resolvePersonalize(none, chat);
  assert.deepEqual({ method: c.method, judge: c.judge, klCoef: c.klCoef, klEstimator: c.klEstimator, entropyGuard: c.entropyGuard }, { method: 'combine', judge: 'self', klCoef: CHAT_KL_COEF, klEstimator: 'full', entropyGuard: CHAT_ENTROPY_GUARD });
  assert.match(c.defaults ?? '', new RegExp(`live policy as teacher, w_opd ${CHAT_OPD_WEIGHT}, each answer distilled until it meets the hint\\), the self judge, the exact KL to base at β ${CHAT_KL_COEF} \\(${CHAT_REWARD_KL_COEF} on answers trained by their reward alone or approved by the judge, ${CHAT_BINARY_KL_COEF} for binary\\), the entropy guard at λ`));
  const plain = await resolvePersonalize(none, STORIES);
  assert.deepEqual({ method: plain.method, klCoef: plain.klCoef, klEstimator: plain.klEstimator, entropyGuard: plain.entropyGuard }, { method: RECIPE.method, klCoef: RECIPE.klCoef, klEstimator: RECIPE.klEstimator, entropyGuard: 0 });
  const flagged = await resolvePersonalize({ 'kl-coef': 0.3 } as Values, chat);
  assert.deepEqual({ klCoef: flagged.klCoef, klEstimator: flagged.klEstimator, entropyGuard: flagged.entropyGuard }, { klCoef: 0.3, klEstimator: 'full', entropyGuard: CHAT_ENTROPY_GUARD }, 'a flag sets only what it names');
  const unguarded = await resolvePersonalize({ 'entropy-guard': 0 } as Values, chat);
  assert.equal(unguarded.entropyGuard, 0);
  // the learning rate follows the model too
  assert.deepEqual([c.learningRate, plain.learningRate, (await resolvePersonalize({ 'learning-rate': 1e-3 } as Values, chat)).learningRate], [CHAT_LEARNING_RATE, RECIPE.learningRate, 1e-3]);
  // and the reward baseline
  assert.deepEqual([c.rewardBaseline, plain.rewardBaseline, (await resolvePersonalize({ 'reward-baseline': 'recent' } as Values, chat)).rewardBaseline], [CHAT_REWARD_BASELINE, RECIPE.rewardBaseline, 'recent']);
  // β follows the method, unless the flag says
  const binary = await resolvePersonalize({ method: 'binary' } as Values, chat);
  assert.deepEqual([binary.klCoef, binary.klCoefFor('opd'), c.klCoefFor('binary'), flagged.klCoefFor('binary')], [CHAT_BINARY_KL_COEF, CHAT_KL_COEF, CHAT_BINARY_KL_COEF, 0.3]);
  // and the OPD teacher
  assert.deepEqual([c.opdTeacher, plain.opdTeacher, (await resolvePersonalize({ 'opd-teacher': 'base' } as Values, chat)).opdTeacher], [CHAT_OPD_TEACHER, 'base', 'base']);
  // the loop guard and w_opd
  assert.deepEqual([c.loopGuard, plain.loopGuard, (await resolvePersonalize({ 'loop-guard': 'punish' } as Values, chat)).loopGuard], [CHAT_LOOP_GUARD, RECIPE.loopGuard, 'punish']);
  assert.deepEqual([c.likelihoodGuard, plain.likelihoodGuard, (await resolvePersonalize({ 'likelihood-guard': 'withhold' } as Values, chat)).likelihoodGuard], [CHAT_LIKELIHOOD_GUARD, RECIPE.likelihoodGuard, 'withhold']);
  assert.deepEqual([c.opdWeight, plain.opdWeight, (await resolvePersonalize({ 'opd-weight': 3 } as Values, chat)).opdWeight], [CHAT_OPD_WEIGHT, 1, 3]);
  assert.deepEqual([c.anchorAnswers, plain.anchorAnswers, (await resolvePersonalize({ 'anchor-answers': 0 } as Values, chat)).anchorAnswers], [CHAT_ANCHOR_ANSWERS, RECIPE.anchorAnswers, 0]);
  assert.deepEqual([c.tailGuard, plain.tailGuard, (await resolvePersonalize({ 'tail-guard': 0 } as Values, chat)).tailGuard], [CHAT_TAIL_GUARD, RECIPE.tailGuard, 0]);
  assert.deepEqual([c.opdWeightFor('opd'), c.opdWeightFor('binary'), binary.opdWeight], [1, 1, 1], 'OPD alone and binary keep w_opd 1');
  // the learning rate settles under OPD alone on the chat model, never elsewhere unless the flag says
  const opd = await resolvePersonalize({ method: 'opd' } as Values, chat);
  assert.deepEqual([c.settle, opd.settle, c.settleFor('opd'), c.settleFor('binary'), binary.settle, (await resolvePersonalize({ method: 'opd' } as Values, STORIES)).settle, (await resolvePersonalize({ settle: 0.25 } as Values, chat)).settle, (await resolvePersonalize({ method: 'opd', settle: 0 } as Values, chat)).settle], [0, CHAT_OPD_SETTLE, CHAT_OPD_SETTLE, 0, 0, 0, 0.25, 0]);
  // β on answers trained by their reward alone, and distillation until the hint is met
  assert.deepEqual([c.rewardKlCoef, plain.rewardKlCoef, flagged.rewardKlCoef, (await resolvePersonalize({ 'reward-kl-coef': 0.05 } as Values, chat)).rewardKlCoef], [CHAT_REWARD_KL_COEF, null, null, 0.05]);
  assert.deepEqual([c.distillUntilMet, plain.distillUntilMet, (await resolvePersonalize({ 'no-distill-until-met': true } as Values, chat)).distillUntilMet, (await resolvePersonalize({ 'distill-until-met': true } as Values, STORIES)).distillUntilMet], [CHAT_DISTILL_UNTIL_MET, false, false, true]);
});

test('demo --json writes its run as one JSON line on stdout; the progress stays on stderr', { timeout: 120_000 }, () => {
  const out = join(tmp.dir, 'demo-json');
  const r = spawnSync(process.execPath, [BIN, 'demo', '--model', STORIES, '--conversations', '4', '--eval-every', '4', '--eval-k', '2', '--out', out, '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 1, r.stdout);
  const run = JSON.parse(lines[0]);
  assert.equal(run.persona, 'dog-lover');
  assert.equal(run.conversations, 4);
  assert.ok(Array.isArray(run.curve) && run.curve.length >= 2, 'the curve from 0 to 4 conversations');
  assert.match(r.stderr, /dog-lover: satisfaction \d+% → \d+%/);
});
