// The OpenClaw plugin's logic, driven with the hook and provider shapes OpenClaw 2026.9 uses
// (../shared/reference/openclaw-client.md §7): a recording stand-in for OpenClaw's plugin API, and the
// real server for the session-end notice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPlugin, serverSettings, turnTypeFor, PROVIDER_ID, DEFAULT_SERVER_URL, type PluginApi } from '../../plugins/openclaw/src/index.ts';
import { startTestServer, post } from '../helpers/server.ts';

/** Records what the plugin registers, the way OpenClaw's loader hands it an api object. */
function fakeApi(extra: Pick<PluginApi, 'pluginConfig' | 'config'> = {}) {
  const hooks = new Map<string, (e: any, ctx: any) => unknown>();
  let provider: Parameters<PluginApi['registerProvider']>[0] | null = null;
  const api: PluginApi = { ...extra, on: (name, h) => { hooks.set(name, h); }, registerProvider: (p) => { provider = p; } };
  return { api, hooks, provider: () => provider! };
}

test('turn type: user runs are main; heartbeat, memory and cron runs and session-less (compaction) calls are side', () => {
  const table: [string, string | undefined, 'main' | 'side'][] = [
    ['conv-a', 'user', 'main'], ['conv-a', undefined, 'main'], ['conv-a', '', 'main'], ['conv-a', 'heartbeat', 'side'],
    ['conv-a', 'memory', 'side'], ['conv-a', 'cron', 'side'], ['', 'user', 'side'],
  ];
  for (const [sid, trigger, expected] of table) assert.equal(turnTypeFor(sid, trigger), expected, `${sid}/${trigger}`);
});

test('wrapStreamFn adds X-Session-Id and X-Turn-Type from the trigger seen in before_prompt_build, keeping other headers', async () => {
  const plugin = createPlugin({ serverUrl: 'http://127.0.0.1:1/v1' });
  const f = fakeApi();
  plugin.register(f.api);
  assert.equal(f.provider().id, PROVIDER_ID);
  const calls: any[] = [];
  const wrapped = f.provider().wrapStreamFn({ streamFn: (model, context, options) => { calls.push({ model, context, options }); return 'stream'; } })!;
  assert.equal(f.provider().wrapStreamFn({}), undefined, 'no stream function, nothing to wrap');
  f.hooks.get('before_prompt_build')!({}, { sessionId: 'conv-a', sessionKey: 'agent:main:explicit:conv-a', trigger: 'user', runId: 'r1' });
  f.hooks.get('before_prompt_build')!({}, { sessionId: 'hb-1', trigger: 'heartbeat' });
  assert.equal(wrapped({ id: 'm' }, { messages: [] }, { sessionId: 'conv-a', headers: { 'X-Static': 'v' } }), 'stream');
  wrapped({ id: 'm' }, { messages: [] }, { sessionId: 'hb-1' });
  wrapped({ id: 'm' }, { messages: [] }, { sessionId: '' }); // a compaction call
  assert.deepEqual(calls.map((c) => c.options.headers), [
    { 'X-Static': 'v', 'X-Session-Id': 'conv-a', 'X-Turn-Type': 'main' },
    { 'X-Session-Id': 'hb-1', 'X-Turn-Type': 'side' },
    { 'X-Session-Id': '', 'X-Turn-Type': 'side' },
  ]);
  assert.equal(calls[0].options.sessionId, 'conv-a', 'the other options pass through');
});

test('session_end tells the server, which ends the session and closes its last turn', async () => {
  const s = await startTestServer();
  try {
    const plugin = createPlugin({ serverUrl: `${s.url}/v1` });
    const f = fakeApi();
    plugin.register(f.api);
    f.hooks.get('before_prompt_build')!({}, { sessionId: 'conv-z', trigger: 'user' });
    const r = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 4 }, { 'x-session-id': 'conv-z', 'x-turn-type': 'main' });
    assert.equal(r.status, 200);
    await f.hooks.get('session_end')!({ reason: 'idle' }, { sessionId: 'conv-z' });
    assert.equal(s.store.sessions().find((x) => x.id === 'conv-z')!.end_reason, 'done');
    assert.equal(s.store.turns('conv-z')[0].next_state_status, 'none');
    assert.equal(plugin.triggers.has('conv-z'), false);
    // an unreachable server is not an error for OpenClaw
    const offline = createPlugin({ serverUrl: 'http://127.0.0.1:9/v1' });
    const g = fakeApi();
    offline.register(g.api);
    await g.hooks.get('session_end')!({}, { sessionId: 'x' });
  } finally {
    await s.close();
  }
});

test('server URL and key: plugin options, then the plugin config entry, then the provider entry, then the environment, then the default', () => {
  const pluginConfig = { serverUrl: 'http://plugin-config/v1', apiKey: 'k-plugin' };
  const config = { models: { providers: { [PROVIDER_ID]: { baseUrl: 'http://provider/v1', apiKey: 'k-provider' } } } };
  const env = { OPENCLAW_RL_URL: 'http://env/v1', OPENCLAW_RL_API_KEY: 'k-env' };
  const table: [Parameters<typeof serverSettings>[0], Parameters<typeof serverSettings>[1], { serverUrl: string; apiKey?: string }][] = [
    [{ serverUrl: 'http://option/v1', apiKey: 'k-option', env }, { pluginConfig, config }, { serverUrl: 'http://option/v1', apiKey: 'k-option' }],
    [{ env }, { pluginConfig, config }, { serverUrl: 'http://plugin-config/v1', apiKey: 'k-plugin' }],
    [{ env }, { pluginConfig: {}, config }, { serverUrl: 'http://provider/v1', apiKey: 'k-provider' }],
    [{ env }, { pluginConfig: { serverUrl: '' }, config: {} }, { serverUrl: 'http://env/v1', apiKey: 'k-env' }],
    [{ env: {} }, {}, { serverUrl: DEFAULT_SERVER_URL, apiKey: undefined }],
  ];
  for (const [options, api, expected] of table) assert.deepEqual(serverSettings(options, api), expected);
});

test('the session-end notice goes to the server named in the plugin config entry, with its key', async () => {
  const s = await startTestServer({ apiKey: 'entry-key' });
  try {
    const plugin = createPlugin({ env: {} });
    const f = fakeApi({ pluginConfig: { serverUrl: `${s.url}/v1`, apiKey: 'entry-key' } });
    plugin.register(f.api);
    const r = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once' }], max_tokens: 2 }, { 'x-session-id': 'conv-cfg', authorization: 'Bearer entry-key' });
    assert.equal(r.status, 200);
    await f.hooks.get('session_end')!({}, { sessionId: 'conv-cfg' });
    assert.equal(s.store.sessions().find((x) => x.id === 'conv-cfg')!.end_reason, 'done');
  } finally {
    await s.close();
  }
});
