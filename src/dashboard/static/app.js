// The dashboard's script: asks for the API key when the server wants one (kept in localStorage),
// polls /admin/dashboard/live every 2 s (overview + new metrics.jsonl lines), refreshes turns and
// versions, draws the curves as SVG. Every text from the server goes into the page as text
// (textContent), never as markup.
'use strict';

const KEY = 'openclaw-rl-api-key';
const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);
const state = { key: localStorage.getItem(KEY) || '', after: 0, lines: [], lastStepSeen: -1, lastTurnsSig: '', timer: null };

class Refused extends Error {}

async function api(path, init = {}) {
  const headers = { ...(init.headers || {}) };
  if (state.key) headers.authorization = `Bearer ${state.key}`;
  const r = await fetch(path, { ...init, headers, cache: 'no-store' });
  if (r.status === 401) throw new Refused(state.key ? 'The server refused this key.' : 'This server needs an API key.');
  const body = await r.json();
  if (!r.ok) throw new Error(body?.error?.message || `HTTP ${r.status}`);
  return body;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function showLogin(message) {
  clearTimeout(state.timer);
  $('app').hidden = true;
  $('login').hidden = false;
  $('logout').hidden = true;
  $('login-error').textContent = message || '';
  $('live').textContent = 'locked';
  $('live').className = 'badge err';
  $('key').focus();
}

function showApp() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = !state.key;
}

// ---- overview ----

const num = (x, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? '–' : Number(x).toFixed(d));
const pct = (x) => (x === null || x === undefined ? '–' : `${(x * 100).toFixed(0)}%`);
function duration(s) {
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h} h ${m} min` : m ? `${m} min ${s % 60} s` : `${s} s`;
}

function card(k, v, s) { return el('div', { class: 'card' }, el('div', { class: 'k', text: k }), el('div', { class: 'v', text: v }), s ? el('div', { class: 's', text: s }) : null); }

function renderOverview(o) {
  $('model').textContent = `${o.model} · ${o.engine.name} (${o.engine.modelType}, ${o.engine.kernel} × ${o.engine.threads})`;
  const j = o.judge;
  const last = o.lastStep;
  const ev = o.evaluation;
  $('overview').replaceChildren(
    card('policy version', String(o.policyVersion), `served to new requests; step ${o.step}`),
    card('method', o.learning ? o.method : 'learning off', last ? `last step: loss ${num(last.loss)}, reward ${num(last.rewardMean, 2)}` : 'no step yet'),
    card('samples', `${o.samples.pending} pending`, `${o.samples.trained} trained · ${Object.entries(o.samples.byStatus).map(([k, v]) => `${k} ${v}`).join(', ') || 'none yet'}`),
    card('judge', `${o.judge.kind}: ${j.judged} judged`, `${j.deferred} waiting for retry · ${j.retries} retries · ${j.voteErrors} vote errors${j.lastError ? ` · last error: ${j.lastError}` : ''}`),
    card('turns', `${o.turns}`, `${o.main} main · ${o.side} side · ${o.sessions} sessions (${o.openSessions} open)`),
    card('requests', `${Object.values(o.requests).reduce((a, b) => a + b, 0)}`, `${o.requestsInFlight} in flight · ${Object.entries(o.requests).map(([k, v]) => `${k}: ${v}`).join(', ') || '–'}`),
    card('uptime', duration(o.uptimeSeconds), `context ${o.engine.contextLength} tokens`),
    card('held-out eval', ev ? (ev.last ? `judge ${pct(ev.last.judgeSatisfaction)} · rule ${pct(ev.last.ruleSatisfaction)}` : 'pending') : 'off', ev ? `${ev.prompts} prompts every ${ev.every === 1 ? "step" : `${ev.every} steps`} · ${ev.runs} runs` : 'serve --eval-file F --eval-every N'),
  );
}

// ---- curves ----

const CHARTS = [
  { title: 'reward mean', key: 'rewardMean', evals: true },
  { title: 'loss', key: 'loss' },
  { title: 'KL to base', key: 'kl' },
  { title: 'clip fraction', key: 'clipFraction' },
  { title: 'teacher − behaviour gap', key: 'teacherGap' },
];
const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) { const e = document.createElementNS(SVG, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v)); return e; }

/** Points per chart: x = the count of published updates so far (rollbacks do not move x back). */
function series(lines) {
  const out = Object.fromEntries(CHARTS.map((c) => [c.key, []]));
  const evals = { judge: [], rule: [] };
  const rollbacks = [];
  let x = 0;
  for (const l of lines) {
    if (l.event === 'step' && l.status === 'published') {
      x++;
      for (const c of CHARTS) if (typeof l[c.key] === 'number') out[c.key].push({ x, y: l[c.key], step: l.step, version: l.version });
    } else if (l.event === 'eval') {
      if (typeof l.judgeScoreMean === 'number') evals.judge.push({ x, y: l.judgeScoreMean, step: l.step, version: l.version });
      if (typeof l.ruleSatisfaction === 'number') evals.rule.push({ x, y: l.ruleSatisfaction, step: l.step, version: l.version });
    } else if (l.event === 'rollback') rollbacks.push({ x, target: l.target });
  }
  return { out, evals, rollbacks, xMax: Math.max(1, x) };
}

function drawChart(c, pts, extra, rollbacks, xMax) {
  const W = 300, H = 150, L = 44, R = 8, T = 8, B = 22;
  const all = [...pts, ...extra.flatMap((e) => e.points)];
  let lo = Math.min(...all.map((p) => p.y)), hi = Math.max(...all.map((p) => p.y));
  if (!all.length) { lo = 0; hi = 1; }
  if (hi - lo < 1e-9) { hi += 0.5; lo -= 0.5; }
  const X = (x) => L + (x / xMax) * (W - L - R), Y = (y) => T + (1 - (y - lo) / (hi - lo)) * (H - T - B);
  const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': c.title });
  for (let i = 0; i <= 4; i++) {
    const y = lo + ((hi - lo) * i) / 4;
    s.append(svg('line', { x1: L, x2: W - R, y1: Y(y), y2: Y(y), stroke: '#eee' }));
    const t = svg('text', { x: L - 4, y: Y(y) + 3, 'font-size': 9, 'text-anchor': 'end', fill: '#666' });
    t.textContent = Math.abs(y) >= 100 ? y.toFixed(0) : y.toFixed(Math.abs(hi - lo) < 0.1 ? 3 : 2);
    s.append(t);
  }
  const xl = svg('text', { x: W - R, y: H - 6, 'font-size': 9, 'text-anchor': 'end', fill: '#666' });
  xl.textContent = `${xMax} updates`;
  s.append(xl, svg('line', { x1: L, x2: L, y1: T, y2: H - B, stroke: '#999' }), svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#999' }));
  for (const r of rollbacks) s.append(svg('line', { x1: X(r.x), x2: X(r.x), y1: T, y2: H - B, stroke: '#b91c1c', 'stroke-dasharray': '3 2' }));
  if (pts.length) {
    s.append(svg('polyline', { points: pts.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(' '), fill: 'none', stroke: '#1f77b4', 'stroke-width': 1.8 }));
    for (const p of pts) { const d = svg('circle', { cx: X(p.x), cy: Y(p.y), r: 2, fill: '#1f77b4' }); const t = svg('title', {}); t.textContent = `step ${p.step}, version ${p.version}: ${p.y.toFixed(4)}`; d.append(t); s.append(d); }
  }
  for (const e of extra) for (const p of e.points) {
    const d = svg('circle', { cx: X(p.x), cy: Y(p.y), r: 3.5, fill: e.color, stroke: '#fff' });
    const t = svg('title', {}); t.textContent = `${e.label} at step ${p.step} (version ${p.version}): ${p.y.toFixed(3)}`; d.append(t); s.append(d);
  }
  const last = pts.length ? pts[pts.length - 1].y : null;
  const legend = extra.filter((e) => e.points.length).map((e) => ` · ${e.label}`).join('');
  return el('div', { class: 'chart', 'data-chart': c.key }, el('h3', {}, c.title, el('small', { text: ` ${last === null ? 'no data yet' : `last ${last.toFixed(4)}`}${legend}` })), s);
}

function renderCharts() {
  const { out, evals, rollbacks, xMax } = series(state.lines);
  $('charts').replaceChildren(...CHARTS.map((c) => drawChart(c, out[c.key], c.evals ? [
    { label: 'eval judge score', color: '#d62728', points: evals.judge },
    { label: 'eval rule satisfaction', color: '#2ca02c', points: evals.rule },
  ] : [], rollbacks, xMax)));
}

// ---- turns ----

function filterQuery() {
  const q = new URLSearchParams({ limit: '30' });
  const session = $('f-session').value.trim(), reward = $('f-reward').value, type = $('f-type').value;
  if (session) q.set('session', session);
  if (reward) q.set('reward', reward);
  if (type) q.set('type', type);
  for (const [id, name] of [['f-from', 'from'], ['f-to', 'to']]) if ($(id).value) q.set(name, new Date($(id).value).toISOString());
  return q.toString();
}

function rewardSpan(score) {
  if (score === null || score === undefined) return el('span', { class: 'reward', text: '–' });
  return el('span', { class: `reward ${score > 0 ? 'pos' : score < 0 ? 'neg' : ''}`, text: score > 0 ? `+${score}` : String(score) });
}

function renderTurn(t) {
  const j = t.judgement, s = t.sample;
  const meta = el('div', { class: 'meta' },
    el('span', {}, 'turn ', el('b', { text: `#${t.id}` })), el('span', {}, 'session ', el('b', { text: t.sessionId })),
    el('span', { text: `${t.turnType}${t.index >= 0 ? ` #${t.index}` : ''} · ${t.status} · ${new Date(t.createdAt).toLocaleString()}` }),
    el('span', {}, 'sampled with ', el('b', { text: `v${t.sampledVersion}` })),
    el('span', {}, 'reward ', rewardSpan(j && j.status === 'done' ? j.score : null)),
    s ? el('span', { text: `sample ${s.kind}, ${s.status}${s.trainedByStep !== null ? ` by step ${s.trainedByStep} → v${s.trainedIntoVersion}` : ''}${s.reason ? ` (${s.reason})` : ''}` }) : null,
    s && s.advantage.mean !== null ? el('span', { text: `advantage mean ${num(s.advantage.mean)} [${num(s.advantage.min)}, ${num(s.advantage.max)}] over ${s.advantage.tokens - s.advantage.masked}/${s.advantage.tokens} tokens` }) : null,
  );
  const votes = j ? j.votes.map((v) => el('div', { class: `vote${v.error ? ' err' : ''}` }, el('b', { text: `${v.kind} ${v.score === null ? '∅' : v.score > 0 ? `+${v.score}` : v.score}` }), ` ${v.error ? `error: ${v.error}` : v.text}`)) : [];
  return el('div', { class: 'turn', 'data-turn': String(t.id) }, meta,
    el('div', {}, el('div', { class: 'label', text: 'user' }), el('div', { class: 'text', text: t.prompt })),
    el('div', {}, el('div', { class: 'label', text: `answer (${t.completionTokens} tokens, ${t.finishReason})` }), el('div', { class: 'text', text: t.answer })),
    el('div', {},
      el('div', { class: 'label', text: `next state (${t.nextState.status}${t.nextState.role ? `, ${t.nextState.role}` : ''})` }),
      el('div', { class: 'text', text: t.nextState.text ?? t.nextState.reason ?? '' }),
      j ? el('div', { class: 'label', text: `judge ${j.backend}: ${j.status}, ${j.rule ? `score ${j.score} by rule (${j.rule})` : `majority ${j.score ?? '–'}`}${j.attempts > 1 ? `, ${j.attempts} attempts` : ''}` }) : el('div', { class: 'label', text: 'not judged' }),
      j && j.hint ? el('div', {}, 'hint: ', el('span', { class: 'hint', text: j.hint })) : null,
      ...votes,
    ));
}

async function refreshTurns() {
  const { turns } = await api(`/admin/dashboard/turns?${filterQuery()}`);
  const sig = JSON.stringify(turns.map((t) => [t.id, t.status, t.judgement?.status, t.sample?.status]));
  if (sig === state.lastTurnsSig) return;
  state.lastTurnsSig = sig;
  $('turns').replaceChildren(...(turns.length ? turns.map(renderTurn) : [el('p', { class: 'muted', text: 'No turns match.' })]));
}

async function refreshSessions() {
  const { sessions } = await api('/admin/dashboard/sessions?limit=200');
  $('sessions').replaceChildren(...sessions.map((s) => el('option', { value: s.id, text: `${s.mainTurns} main turns` })));
  $('sessions-table').tBodies[0].replaceChildren(...sessions.map((s) => el('tr', {},
    el('td', {}, el('button', { class: 'link', 'data-session': s.id, text: s.id })), el('td', { text: s.idSource }), el('td', { text: s.mainTurns }),
    el('td', { text: s.sideTurns }), el('td', { text: num(s.rewardMean, 2) }), el('td', { text: new Date(s.lastSeenAt).toLocaleString() }),
    el('td', { text: s.endedAt ? `${new Date(s.endedAt).toLocaleTimeString()} (${s.endReason})` : 'open' }))));
}

// ---- versions ----

async function refreshVersions() {
  const { published, versions } = await api('/admin/dashboard/versions');
  $('versions').tBodies[0].replaceChildren(...versions.map((v) => {
    const button = v.kept && v.version !== published ? el('button', { 'data-version': String(v.version), text: 'roll back to this' }) : null;
    return el('tr', { class: v.version === published ? 'current' : '' },
      el('td', {}, el('b', { text: `v${v.version}` }), v.version === published ? ' (serving)' : ''), el('td', { text: v.step ?? '–' }), el('td', { text: v.status }),
      el('td', { text: v.publishedAt ? new Date(v.publishedAt).toLocaleString() : '–' }),
      el('td', {}, v.samples > 0 ? el('button', { class: 'link', 'data-samples': String(v.version), text: `${v.samples} turns` }) : String(v.samples)),
      el('td', { text: num(v.rewardMean, 2) }),
      el('td', { text: v.reason ?? '' }), el('td', {}, button));
  }));
}

/** The turns a version was trained on, in a row under it. */
async function showSamples(button) {
  const row = button.closest('tr');
  if (row.nextElementSibling?.classList.contains('samples')) { row.nextElementSibling.remove(); return; }
  const { samples } = await api(`/admin/dashboard/versions/${button.dataset.samples}`);
  const list = samples.map((x) => `#${x.turnId} (${x.sessionId}, reward ${x.reward === null ? '–' : x.reward > 0 ? `+${x.reward}` : x.reward})`).join(', ');
  row.after(el('tr', { class: 'samples' }, el('td', { colspan: '8', text: `trained on ${samples.length} turns: ${list}` })));
}

async function rollbackTo(version) {
  if (!confirm(`Serve and continue training from version ${version}? Samples trained after it are set aside.`)) return;
  try {
    const r = await api('/admin/rollback', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ version }) });
    $('rollback-msg').textContent = `Rolled back to version ${r.target}: now serving version ${r.version} (step ${r.step}); ${r.samplesSetAside} samples set aside.`;
    await poll(true);
  } catch (e) {
    $('rollback-msg').textContent = `Rollback failed: ${e.message}`;
  }
}

// ---- the loop ----

async function poll(force = false) {
  clearTimeout(state.timer);
  try {
    const live = await api(`/admin/dashboard/live?after=${state.after}`);
    showApp();
    if (live.metrics.next < state.after) { state.lines = []; state.after = 0; } // the log was replaced: start over
    state.lines.push(...live.metrics.lines);
    state.after = live.metrics.next;
    renderOverview(live.overview);
    if (live.metrics.lines.length || force || !$('charts').childElementCount) renderCharts();
    await refreshTurns();
    if (force || live.overview.step !== state.lastStepSeen) {
      state.lastStepSeen = live.overview.step;
      await Promise.all([refreshVersions(), refreshSessions()]);
    }
    $('live').textContent = `live · updated ${new Date().toLocaleTimeString()}`;
    $('live').className = 'badge ok';
  } catch (e) {
    if (e instanceof Refused) { if (state.key) { localStorage.removeItem(KEY); state.key = ''; } showLogin(e.message); return; }
    $('live').textContent = `error: ${e.message}`;
    $('live').className = 'badge err';
  }
  state.timer = setTimeout(poll, POLL_MS);
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.key = $('key').value.trim();
    $('key').value = '';
    localStorage.setItem(KEY, state.key);
    state.after = 0; state.lines = []; state.lastTurnsSig = ''; state.lastStepSeen = -1;
    void poll(true);
  });
  $('logout').addEventListener('click', () => { localStorage.removeItem(KEY); state.key = ''; showLogin(''); });
  $('filters').addEventListener('input', () => { state.lastTurnsSig = ''; void refreshTurns().catch(() => {}); });
  $('sessions-table').addEventListener('click', (ev) => {
    const id = ev.target instanceof HTMLElement ? ev.target.dataset.session : undefined;
    if (id === undefined) return;
    $('f-session').value = id;
    state.lastTurnsSig = '';
    void refreshTurns().catch(() => {});
    $('turns').scrollIntoView();
  });
  $('versions').addEventListener('click', (ev) => {
    if (!(ev.target instanceof HTMLElement)) return;
    if (ev.target.dataset.samples !== undefined) { void showSamples(ev.target).catch((e) => { $('rollback-msg').textContent = e.message; }); return; }
    const v = ev.target.dataset.version;
    if (v !== undefined) void rollbackTo(Number(v));
  });
  void poll(true);
});
