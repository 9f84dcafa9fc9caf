// The tool-call and terminal environments: tasks, tools, verifiers and rewards, with scripted
// policies standing in for the model (correct, wrong and partial solutions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTasks, makeTask, extractAnswer, isCorrect, answerReward, expressionPart, EXPRESSION_PARTS } from '../../src/env/arithmetic.ts';
import { ToolCallEnv } from '../../src/env/toolcall.ts';
import { TerminalEnv, checkReward } from '../../src/env/terminal.ts';
import { makeTerminalTasks, loadTasks } from '../../src/env/tasks.ts';
import { sandboxSupport } from '../../src/env/sandbox.ts';
import { calculate } from '../../src/env/calculator.ts';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const noSandbox = sandboxSupport().ok ? false : (sandboxSupport() as { reason: string }).reason;

test('arithmetic tasks are deterministic per seed, their answers match their expressions, and the splits share no wording', () => {
  assert.deepEqual(makeTask('train', 5), makeTask('train', 5));
  const train = makeTasks('train', 400), held = makeTasks('heldout', 400);
  for (const t of [...train, ...held]) {
    assert.equal(calculate(t.expression), t.answer, t.key);
    assert.ok(Number.isInteger(t.answer) && t.answer > 0, `${t.key}: ${t.answer}`);
  }
  // the sentence frame (numbers, names and items removed) of a held-out question never appears in training
  const frame = (q: string) => q.replace(/\d+/g, '#').replace(/\b(Tom|Lily|Sam|Mia|Ben|Anna|Max|Zoe)\b/g, 'N').replace(/\b(apples|stickers|marbles|books|coins|cookies|shells|cards)\b/g, 'I').replace(/[-+*/]/g, 'op');
  const trainFrames = new Set(train.map((t) => frame(t.question)));
  assert.ok(held.every((t) => !trainFrames.has(frame(t.question))));
  assert.ok(new Set(held.map((t) => t.question)).size > 300);
});

test('the answer verifier reads boxed answers, "the answer is N", or the last number', () => {
  const table: [string, number | null][] = [
    ['The answer is 802.', 802], ['\\boxed{42}', 42], ['Answer: 1,024', 1024], ['417 + 385 = 802.', 802], ['It is -7.', -7],
    ['no idea', null], ['<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}</tool_call>', null], ['3.5 apples', 3.5],
  ];
  for (const [m, v] of table) assert.equal(extractAnswer(m), v, m);
  assert.equal(isCorrect('The answer is 802.', 802), true);
  assert.equal(isCorrect('The answer is 801.', 802), false);
});

test('outcome rewards: +1 correct; wrong answers shaped by tool calls, between −1 and −0.6', () => {
  const table: [boolean, number, number][] = [[true, 0, 1], [true, 9, 1], [false, 0, -1], [false, 2, -1], [false, 4, -0.9], [false, 6, -0.8], [false, 8, -0.7], [false, 16, -0.6]];
  for (const [correct, calls, reward] of table) assert.ok(Math.abs(answerReward(correct, calls) - reward) < 1e-9, `${correct} ${calls}`);
});

test('tool-call environment: the calculator answers, a correct final answer scores +1, a wrong one is shaped', async () => {
  const env = new ToolCallEnv({ python: false });
  const task = makeTask('heldout', 3);
  const r = await env.reset(task as never);
  assert.equal(r.user, task.question);
  assert.deepEqual(r.tools.map((t) => t.function.name), ['calculator']);
  const obs = await env.execTool({ name: 'calculator', arguments: { expression: task.expression } });
  assert.deepEqual(obs, { content: String(task.answer), error: false, done: false });
  assert.equal((await env.execTool({ name: 'calculator', arguments: { expression: 'import os' } })).error, true);
  assert.match((await env.execTool({ name: 'shell', arguments: {} })).content, /unknown tool/);
  assert.deepEqual(await env.evaluate({ finalMessage: `The answer is ${task.answer}.`, toolCalls: 3 }), { score: 1, success: true, detail: 'correct' });
  const wrong = await env.evaluate({ finalMessage: `The answer is ${task.answer + 1}.`, toolCalls: 4 });
  assert.equal(wrong.success, false);
  assert.ok(Math.abs(wrong.score - -0.9) < 1e-9);
  await env.close();
});

test('tool-call environment: the budget of tool calls ends the episode at 16', async () => {
  const env = new ToolCallEnv({ python: false });
  await env.reset(makeTask('train', 1) as never);
  const dones: boolean[] = [];
  for (let i = 0; i < 16; i++) dones.push((await env.execTool({ name: 'calculator', arguments: { expression: '1+1' } })).done);
  assert.deepEqual(dones, [...Array(15).fill(false), true]);
  await env.close();
});

test('tool-call environment: python runs in the sandbox with its limits', { skip: noSandbox }, async () => {
  const env = new ToolCallEnv({ sandbox: { wallMs: 3000, cpuSeconds: 2 } });
  const r = await env.reset(makeTask('train', 2) as never);
  assert.deepEqual(r.tools.map((t) => t.function.name), ['calculator', 'python']);
  assert.match((await env.execTool({ name: 'python', arguments: { code: 'print(417 + 385)' } })).content, /^802\n\[exit code 0\]$/);
  const loop = await env.execTool({ name: 'python', arguments: { code: 'while True: pass' } });
  assert.equal(loop.error, true);
  assert.match(loop.content, /killed/);
  assert.match((await env.execTool({ name: 'python', arguments: { code: 'open("/etc/shadow").read()' } })).content, /FileNotFoundError|No such file/);
  assert.ok((await env.execTool({ name: 'python', arguments: { code: 'print("x" * 5000)' } })).content.length <= 1025);
  await env.close();
});

test('terminal reward is 2·(fraction of checks passed) − 1', () => {
  assert.deepEqual([checkReward(0, 3), checkReward(3, 3), checkReward(1, 2), checkReward(0, 0)], [-1, 1, 0, -1]);
});

test('terminal environment: a scripted correct solution passes every check (+1); doing nothing scores −1', { skip: noSandbox }, async () => {
  const tasks = makeTerminalTasks('train', 12);
  let solved = 0;
  for (const task of tasks) {
    const env = new TerminalEnv();
    const r = await env.reset(task);
    assert.equal(r.user, task.description);
    const d = task.description;
    let m: RegExpExecArray | null;
    if ((m = /named (\w+)\.txt that contains the single line: (\w+)/.exec(d))) await env.execTool({ name: 'write_file', arguments: { path: `${m[1]}.txt`, content: `${m[2]}\n` } });
    else if (/number of lines/.test(d)) await env.execTool({ name: 'run', arguments: { command: 'wc -l < data.txt > count.txt' } });
    else if ((m = /folder named (\w+) with (\d+) empty files/.exec(d))) await env.execTool({ name: 'run', arguments: { command: `mkdir ${m[1]} && cd ${m[1]} && for i in $(seq ${m[2]}); do touch f$i; done` } });
    else if ((m = /prints (\w+) (\d+) times/.exec(d))) await env.execTool({ name: 'write_file', arguments: { path: 'run.sh', content: `for i in $(seq ${m[2]}); do echo ${m[1]}; done\n` } });
    const e = await env.evaluate({ finalMessage: 'DONE', toolCalls: 1 });
    assert.equal(e.score, 1, `${task.key}: ${e.detail}`);
    solved++;
    await env.close();
    const idle = new TerminalEnv();
    await idle.reset(task);
    const none = await idle.evaluate({ finalMessage: '', toolCalls: 0 });
    assert.ok(none.score < 1 && none.success === false, `${task.key} unsolved: ${none.detail}`);
    await idle.close();
  }
  assert.equal(solved, 12);
});

test('task files: JSONL tasks load with clear errors for bad lines; builtin:SPLIT:N generates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openclaw-rl-tasks-'));
  const good = join(dir, 'good.jsonl');
  writeFileSync(good, `${JSON.stringify({ key: 'a', question: 'What is 2+2?', answer: 4 })}\n\n${JSON.stringify({ key: 'b', question: 'What is 3*3?', answer: 9 })}\n`);
  assert.equal(loadTasks('toolcall', good).length, 2);
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, `${JSON.stringify({ key: 'a', question: 'q' })}\n`);
  assert.throws(() => loadTasks('toolcall', bad), /bad\.jsonl:1: .*answer/);
  writeFileSync(bad, `{oops\n`);
  assert.throws(() => loadTasks('toolcall', bad), /bad\.jsonl:1: not valid JSON/);
  writeFileSync(bad, `${JSON.stringify({ key: 't', description: 'x', checks: [] })}\n`);
  assert.throws(() => loadTasks('terminal', bad), /checks/);
  assert.throws(() => loadTasks('toolcall', join(dir, 'missing.jsonl')), /not found/);
  assert.equal(loadTasks('terminal', 'builtin:heldout:5').length, 5);
  assert.equal(loadTasks('toolcall', 'builtin:train:7:100')[0].key, 'arith-train-100');
  const bare = loadTasks('toolcall', 'expressions:heldout:30');
  assert.ok(bare.every((t) => (t.question as string).includes(t.expression as string)), 'expressions:… tasks are bare expressions');
  assert.throws(() => loadTasks('terminal', 'expressions:train:3'), /toolcall/);
  const small = loadTasks('toolcall', 'small:train:50');
  assert.ok(small.every((t) => /^\d{1,2} [-+*] \d{1,2}$/.test(t.expression as string) && (t.answer as number) >= 0));
});

test('small-disjoint:PART:N: train, validation and held-out tasks never share an expression; held-out wordings off training', () => {
  const parts = Object.fromEntries(EXPRESSION_PARTS.map((p) => [p, loadTasks('toolcall', `small-disjoint:${p}:400`)]));
  const exprs = Object.fromEntries(EXPRESSION_PARTS.map((p) => [p, new Set(parts[p].map((t) => t.expression as string))]));
  for (const [a, b] of [['train', 'val'], ['train', 'heldout'], ['val', 'heldout']] as const) {
    assert.equal([...exprs[a]].filter((e) => exprs[b].has(e)).length, 0, `${a} and ${b} share no expression`);
  }
  for (const p of EXPRESSION_PARTS) {
    assert.equal(parts[p].length, 400);
    assert.ok(parts[p].every((t) => expressionPart(t.expression as string) === p && /^\d{1,2} [-+*] \d{1,2}$/.test(t.expression as string)));
    assert.equal(new Set(parts[p].map((t) => t.key)).size, 400, 'keys are unique');
  }
  // a fixed partition: about 1 in 8 expressions held out, 1 in 8 for validation
  const all = makeTasks('train', 4000, 0, 'small').map((t) => expressionPart(t.expression));
  const share = (p: string) => all.filter((x) => x === p).length / all.length;
  assert.ok(Math.abs(share('heldout') - 0.125) < 0.03 && Math.abs(share('val') - 0.125) < 0.03, `shares ${share('heldout')}, ${share('val')}`);
  // deterministic, and N:START continues the same sequence
  assert.deepEqual(loadTasks('toolcall', 'small-disjoint:heldout:10:5'), parts.heldout.slice(5, 15));
  // validation and held-out use the held-out wordings, never the training ones
  const trainWordings = ['What is', 'Compute', 'Calculate', 'How much is', 'Work out'];
  assert.ok([...parts.val, ...parts.heldout].every((t) => !trainWordings.some((w) => (t.question as string).startsWith(w))));
  assert.throws(() => loadTasks('terminal', 'small-disjoint:train:3'), /toolcall/);
  assert.throws(() => loadTasks('toolcall', 'small-disjoint:test:3'), /not found/);
});
