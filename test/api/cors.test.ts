// CORS: off by default; configured origins get Access-Control-Allow-Origin on responses, and preflights are
// answered before the API key is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { corsHeaders, parseOrigins, preflightHeaders } from '../../src/api/cors.ts';
import { startTestServer } from '../helpers/server.ts';

test('origins: a comma list, * for any; only listed origins are answered', () => {
  assert.deepEqual(parseOrigins(' https://a.example/, http://localhost:5173 ,'), ['https://a.example', 'http://localhost:5173']);
  const table: [string[], string | undefined, string | null][] = [
    [[], 'https://a.example', null],
    [['https://a.example'], 'https://a.example', 'https://a.example'],
    [['https://a.example'], 'https://evil.example', null],
    [['https://a.example'], undefined, null],
    [['*'], 'https://anything.example', '*'],
  ];
  for (const [allowed, origin, expected] of table) assert.equal(corsHeaders(allowed, origin)?.['access-control-allow-origin'] ?? null, expected, `${allowed} ${origin}`);
  assert.equal(preflightHeaders('x-custom')['access-control-allow-headers'], 'x-custom');
});

test('a preflight is answered without the key; responses carry the origin; other origins and no configuration get nothing', async () => {
  const s = await startTestServer({ apiKey: 'k', corsOrigins: ['https://app.example'] });
  try {
    const pre = await fetch(`${s.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.match(pre.headers.get('access-control-allow-methods')!, /POST/);
    assert.equal(pre.headers.get('access-control-allow-headers'), 'authorization, content-type');
    const models = await fetch(`${s.url}/v1/models`, { headers: { origin: 'https://app.example', authorization: 'Bearer k' } });
    assert.equal(models.headers.get('access-control-allow-origin'), 'https://app.example');
    const denied = await fetch(`${s.url}/v1/models`, { headers: { origin: 'https://evil.example', authorization: 'Bearer k' } });
    assert.equal(denied.headers.get('access-control-allow-origin'), null);
    const unauthorised = await fetch(`${s.url}/v1/models`, { headers: { origin: 'https://app.example' } });
    assert.equal(unauthorised.status, 401, 'CORS does not replace the key');
    assert.equal(unauthorised.headers.get('access-control-allow-origin'), 'https://app.example', 'the browser may read the error');
  } finally {
    await s.close();
  }
  const plain = await startTestServer();
  try {
    const pre = await fetch(`${plain.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
    assert.equal(pre.headers.get('access-control-allow-origin'), null);
    assert.notEqual(pre.status, 204);
  } finally {
    await plain.close();
  }
});
