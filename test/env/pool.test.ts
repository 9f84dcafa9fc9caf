// The environment pool protocol: leases, capacity, heartbeats, reclaiming crashed and hung
// environments — in process, over HTTP, and through the router over several env servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { LocalPool } from '../../src/env/pool.ts';
import { startEnvServer } from '../../src/env/server.ts';
import { HttpPool, EnvRouter, serverIndex } from '../../src/env/client.ts';
import { PoolFullError, LeaseLostError, EnvRequestError, type EnvFactory, type Environment, type EnvPool } from '../../src/env/types.ts';
import { makeTasks } from '../../src/env/arithmetic.ts';

/** A real (small) environment whose calls can be told to crash or hang, to exercise reclaiming. */
function scriptedFactory(): EnvFactory {
  return {
    name: 'scripted',
    create: (): Environment => ({
      reset: async (task) => ({ system: '', user: String(task.question ?? task.key), tools: [], maxToolCalls: 4 }),
      execTool: async (call) => {
        if (call.name === 'crash') throw new Error('the environment process died');
        if (call.name === 'hang') await new Promise(() => {});
        return { content: `echo ${JSON.stringify(call.arguments)}`, error: false, done: false };
      },
      evaluate: async (req) => ({ score: req.finalMessage === 'right' ? 1 : -1, success: req.finalMessage === 'right' }),
      close: async () => {},
    }),
  };
}

test('a local pool leases up to its capacity, then refuses with PoolFullError until a lease closes', async () => {
  const pool = new LocalPool(scriptedFactory(), { capacity: 2 });
  const a = await pool.allocate('t1');
  await pool.allocate('t2');
  await assert.rejects(pool.allocate('t3'), PoolFullError);
  await pool.close(a);
  assert.ok(await pool.allocate('t3'));
  await pool.shutdown();
});

test('a lease goes allocate → reset → exec_tool → evaluate → close, and verbs out of order are bad requests', async () => {
  const pool = new LocalPool(scriptedFactory(), { capacity: 1 });
  const l = await pool.allocate('k');
  await assert.rejects(pool.execTool(l, { name: 'x', arguments: {} }), EnvRequestError);
  const r = await pool.reset(l, { key: 'k', question: 'what?' });
  assert.equal(r.user, 'what?');
  assert.equal((await pool.execTool(l, { name: 'x', arguments: { a: 1 } })).content, 'echo {"a":1}');
  assert.deepEqual(await pool.evaluate(l, { finalMessage: 'right', toolCalls: 1 }), { score: 1, success: true });
  await pool.close(l);
  assert.equal((await pool.stats()).completed, 1);
  await pool.shutdown();
});

test('a crashed environment fails its lease: later calls get LeaseLostError and the slot is free again', async () => {
  const pool = new LocalPool(scriptedFactory(), { capacity: 1 });
  const l = await pool.allocate('k');
  await pool.reset(l, { key: 'k' });
  await assert.rejects(pool.execTool(l, { name: 'crash', arguments: {} }), /died/);
  await assert.rejects(pool.evaluate(l, { finalMessage: 'right', toolCalls: 1 }), LeaseLostError);
  assert.equal((await pool.stats()).failed, 1);
  assert.ok(await pool.allocate('k2'));
  await pool.shutdown();
});

test('a hung environment call is cut at the call timeout and its lease is failed', async () => {
  const pool = new LocalPool(scriptedFactory(), { capacity: 1, callTimeoutMs: 200 });
  const l = await pool.allocate('k');
  await pool.reset(l, { key: 'k' });
  const t0 = Date.now();
  await assert.rejects(pool.execTool(l, { name: 'hang', arguments: {} }), (e: Error) => e instanceof LeaseLostError && /hung/.test(e.message));
  assert.ok(Date.now() - t0 < 2000);
  await assert.rejects(pool.heartbeat(l), LeaseLostError);
  await pool.shutdown();
});

test('a lease without heartbeats is reclaimed after its TTL; one with heartbeats lives on', async () => {
  const pool = new LocalPool(scriptedFactory(), { capacity: 2, leaseTtlMs: 300 });
  const idle = await pool.allocate('idle');
  const kept = await pool.allocate('kept');
  const beat = setInterval(() => void pool.heartbeat(kept), 80);
  await new Promise((r) => setTimeout(r, 900));
  clearInterval(beat);
  await assert.rejects(pool.reset(idle, { key: 'idle' }), (e: Error) => e instanceof LeaseLostError && /no heartbeat/.test(e.message));
  assert.ok(await pool.reset(kept, { key: 'kept' }));
  assert.equal((await pool.stats()).reclaimed, 1);
  await pool.shutdown();
});

test('over HTTP the pool answers 429 when full, 410 for a lost lease, 400 for bad input, with {ok:false, error}', async () => {
  const pool = new LocalPool(scriptedFactory(), { capacity: 1 });
  const srv = await startEnvServer(pool, { port: 0 });
  const post = async (path: string, body: unknown) => {
    const r = await fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: r.status, json: await r.json() as { ok: boolean; error?: { message: string }; lease_id?: string } };
  };
  const a = await post('/allocate', { task_key: 'k' });
  assert.equal(a.status, 200); assert.equal(a.json.ok, true);
  const full = await post('/allocate', { task_key: 'k2' });
  assert.equal(full.status, 429); assert.equal(full.json.ok, false); assert.match(full.json.error!.message, /leased/);
  assert.equal((await post('/reset', { lease_id: 'nope', task_meta: { key: 'x' } })).status, 410);
  assert.equal((await post('/allocate', '{not json')).status, 400);
  assert.equal((await post('/allocate', {})).status, 400);
  assert.equal((await post('/exec_tool', { lease_id: a.json.lease_id })).status, 400);
  assert.equal((await fetch(srv.url + '/nothing')).status, 404);
  // the typed client maps the same answers to the same errors as the local pool
  const client = new HttpPool(srv.url);
  await assert.rejects(client.allocate('k3'), PoolFullError);
  await assert.rejects(client.heartbeat('nope'), LeaseLostError);
  await srv.close(); await pool.shutdown();
});

test('the router sends a task key to sha1(key) mod N and rewrites leases as "<server>:<lease>"', async () => {
  const pools = [new LocalPool(scriptedFactory(), { capacity: 8 }), new LocalPool(scriptedFactory(), { capacity: 8 })];
  const router = new EnvRouter(pools);
  for (const key of ['a', 'b', 'c', 'd', 'e']) {
    const lease = await router.allocate(key);
    assert.equal(Number(lease.split(':')[0]), serverIndex(key, 2));
    await router.reset(lease, { key });
    await router.close(lease);
  }
  await assert.rejects(router.heartbeat('garbage'), EnvRequestError);
  for (const p of pools) await p.shutdown();
});

/** Start `openclaw-rl env-server` as its own process and wait for its URL. */
async function spawnEnvServer(env: string, capacity: number): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['bin/openclaw-rl.js', 'env-server', '--env', env, '--capacity', String(capacity), '--port', '0', '--lease-ttl-seconds', '5'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    lines.on('line', (l) => { const m = / at (http:\/\/\S+)/.exec(l); if (m) resolve(m[1]); });
    child.once('exit', (code) => reject(new Error(`env-server exited with ${code}`)));
  });
  return { child, url };
}

/** One toolcall episode through a pool, the policy played by a script that uses the calculator. */
async function scriptedEpisode(pool: EnvPool, task: { key: string; question: string; answer: number; expression: string }, pauseMs: number): Promise<{ reward: number }> {
  const lease = await pool.allocate(task.key);
  const beat = setInterval(() => void pool.heartbeat(lease).catch(() => {}), 500);
  try {
    await pool.reset(lease, task);
    await new Promise((r) => setTimeout(r, pauseMs));
    const obs = await pool.execTool(lease, { name: 'calculator', arguments: { expression: task.expression } });
    await new Promise((r) => setTimeout(r, pauseMs));
    const e = await pool.evaluate(lease, { finalMessage: `The answer is ${obs.content}.`, toolCalls: 1 });
    await pool.close(lease);
    return { reward: e.score };
  } finally { clearInterval(beat); }
}

test('32 concurrent episodes over 2 env servers on loopback all complete with the verifier\'s reward', async () => {
  const servers = await Promise.all([spawnEnvServer('toolcall', 16), spawnEnvServer('toolcall', 16)]);
  try {
    const router = EnvRouter.over(servers.map((s) => s.url));
    const tasks = makeTasks('train', 32);
    const results = await Promise.all(tasks.map((t) => scriptedEpisode(router, t, 50)));
    assert.equal(results.length, 32);
    assert.ok(results.every((r) => r.reward === 1));
    const per = await Promise.all(router.pools.map((p) => p.stats()));
    assert.equal(per[0].completed + per[1].completed, 32);
    assert.ok(per[0].completed > 0 && per[1].completed > 0, 'both servers took episodes');
  } finally { for (const s of servers) s.child.kill('SIGKILL'); }
});

test('killing an env server mid-run fails only its in-flight leases; completed episodes are kept and new ones go to the live server', async () => {
  const servers = await Promise.all([spawnEnvServer('toolcall', 16), spawnEnvServer('toolcall', 16)]);
  try {
    const router = EnvRouter.over(servers.map((s) => s.url));
    const tasks = makeTasks('train', 32);
    // first wave completes before the kill
    const first = await Promise.all(tasks.slice(0, 8).map((t) => scriptedEpisode(router, t, 0)));
    assert.ok(first.every((r) => r.reward === 1));
    // second wave is in flight (slow) when server 0 dies
    const inFlight = tasks.slice(8, 24).map((t) => ({ t, server: serverIndex(t.key, 2), run: scriptedEpisode(router, t, 700).then((r) => ({ ok: true as const, r }), (e: Error) => ({ ok: false as const, e })) }));
    await new Promise((r) => setTimeout(r, 300));
    servers[0].child.kill('SIGKILL');
    const outcomes = await Promise.all(inFlight.map(async (x) => ({ ...x, out: await x.run })));
    for (const o of outcomes) {
      if (o.server === 0) assert.ok(!o.out.ok && o.out.e instanceof LeaseLostError, `episode ${o.t.key} on the killed server fails with a lost lease (${!o.out.ok ? o.out.e : 'ok'})`);
      else assert.ok(o.out.ok && o.out.r.reward === 1, `episode ${o.t.key} on the live server completes`);
    }
    assert.ok(outcomes.some((o) => o.server === 0) && outcomes.some((o) => o.server === 1));
    // after the kill, every task — even those hashed to the dead server — runs on the live one
    const after = await Promise.all(tasks.slice(24).map((t) => scriptedEpisode(router, t, 0)));
    assert.ok(after.every((r) => r.reward === 1));
    assert.equal(first.length + after.length + outcomes.filter((o) => o.out.ok).length, 8 + 8 + outcomes.filter((o) => o.server === 1).length);
  } finally { for (const s of servers) s.child.kill('SIGKILL'); }
});
