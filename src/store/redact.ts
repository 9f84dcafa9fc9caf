// Redaction of secrets before text is stored or leaves the process (logs, exports, the store's text
// columns under --redact all). Three layers:
// - provider formats (API keys and tokens whose shape is published: AWS, GitHub, Slack, Stripe,
//   Google, Hugging Face, OpenAI, Anthropic, npm, PyPI, …), PEM private keys, credentials in URLs,
//   JWTs and Authorization schemes;
// - key/value and prose forms: `password=…`, `"api_key": "…"` (also with JSON-escaped quotes),
//   "my password is …" — any value length, so short passwords go too;
// - long random-looking tokens, by character mix and Shannon entropy.
// Each pattern is paired with its replacement; a key/value secret keeps its key. It errs toward
// redacting: a false positive costs a word of training context, a miss leaks a secret.

export const REDACTED = '[REDACTED]';

/** [what, pattern, replacement] */
const PATTERNS: [string, RegExp, string][] = [
  ['PEM private key', /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g, REDACTED],
  ['credentials in a URL', /\b([a-z][a-z0-9+.-]{1,20}:\/\/)[^\s:@/"'\\]+:[^\s@/"'\\]+@/gi, `$1${REDACTED}@`],
  ['Slack webhook', /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]+/g, REDACTED],
  ['OpenAI / Anthropic key', /\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{16,}/g, REDACTED],
  ['AWS access key id', /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b/g, REDACTED],
  ['GitHub token', /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/g, REDACTED],
  ['GitLab token', /\bglpat-[A-Za-z0-9_-]{20,}/g, REDACTED],
  ['Slack token', /\bxox[abposre]-[A-Za-z0-9-]{10,}/g, REDACTED],
  ['Stripe key', /\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}/g, REDACTED],
  ['Google API key', /\bAIza[0-9A-Za-z_-]{35}/g, REDACTED],
  ['Google OAuth secret or token', /\b(?:GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[0-9A-Za-z_-]{20,})/g, REDACTED],
  ['Hugging Face token', /\bhf_[A-Za-z0-9]{30,}/g, REDACTED],
  ['npm token', /\bnpm_[A-Za-z0-9]{36}\b/g, REDACTED],
  ['PyPI token', /\bpypi-[A-Za-z0-9_-]{40,}/g, REDACTED],
  ['SendGrid key', /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, REDACTED],
  ['Twilio key', /\b(?:SK|AC)[0-9a-f]{32}\b/g, REDACTED],
  ['Mailgun key', /\bkey-[0-9a-f]{32}\b/g, REDACTED],
  ['Telegram bot token', /\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b/g, REDACTED],
  ['Discord bot token', /\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}/g, REDACTED],
  ['DigitalOcean token', /\bdo[opr]_v1_[a-f0-9]{64}\b/g, REDACTED],
  ['Shopify token', /\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b/g, REDACTED],
  ['Databricks token', /\bdapi[a-f0-9]{32}\b/g, REDACTED],
  ['JWT', /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, REDACTED],
  ['Authorization scheme', /\b(Bearer|Basic|Token|Bot)\s+[A-Za-z0-9._~+/=-]{8,}/g, `$1 ${REDACTED}`],
  // key = value, key: value, "key": "value" (quotes possibly JSON-escaped), any value length
  ['key/value secret', new RegExp(
    String.raw`((?:password|passwd|passphrase|passcode|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret[_-]?access[_-]?key|` +
    String.raw`session[_-]?token|access[_-]?token|auth[_-]?token|refresh[_-]?token|token|private[_-]?key|credentials?|accountkey|sharedaccesskey|sig|` +
    String.raw`aws_secret_access_key|aws_session_token|x-api-key)\\*["']?\s*(?:[:=]|=>|:=)\s*\\*["']?)(?!\[REDACTED\])[^\s"'\\,;&}{)<>]+`, 'gi'), `$1${REDACTED}`],
  // prose: "my password is hunter2", "the api key was abc123"
  ['secret in prose', /\b((?:password|passphrase|passcode|pin code|api key|secret key|access key|login)\s+(?:is|was|=|:)\s+["'“]?)(?!\[REDACTED\])[^\s"'”,;]+/gi, `$1${REDACTED}`],
];

/** The kinds of secret the patterns name (for documentation and tests). */
export const SECRET_KINDS = PATTERNS.map(([what]) => what).concat('long random token (entropy)');

/** Shannon entropy of `s` in bits per character. */
export function entropyBits(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) { const p = n / s.length; h -= p * Math.log2(p); }
  return h;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Does this run of token characters look like a random secret? Long (≥ 24), high entropy, and mixed
 * like generated keys are: upper and lower case with digits, or long hex with letters and digits.
 * Words, identifiers in one case, paths and UUIDs are left alone.
 */
export function looksRandom(s: string): boolean {
  if (s.length < 24 || UUID.test(s)) return false;
  const digits = s.replace(/[^0-9]/g, '').length;
  if (/^[0-9a-f]+$/i.test(s)) return s.length >= 32 && digits >= 4 && s.length - digits >= 4 && entropyBits(s) >= 3;
  return /[a-z]/.test(s) && /[A-Z]/.test(s) && digits >= 2 && entropyBits(s) >= 3.5;
}

/** The text with every secret the patterns and the entropy check find replaced by [REDACTED]. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [, pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out.replace(/[A-Za-z0-9+/_=-]{24,}/g, (run) => (looksRandom(run) ? REDACTED : run));
}

/**
 * A copy of a JSON value with every string redacted (object keys too). Walks without recursion, so
 * any nesting is safe; values that are not JSON (functions, symbols) are dropped as JSON would.
 */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (typeof value !== 'object' || value === null) return value;
  const root: unknown = Array.isArray(value) ? [] : {};
  const stack: [unknown, Record<string | number, unknown>][] = [[value, root as Record<string, unknown>]];
  while (stack.length) {
    const [src, dst] = stack.pop()!;
    const entries = Array.isArray(src) ? src.map((v, i) => [i, v] as const) : Object.entries(src as object);
    for (const [k, v] of entries) {
      const key = typeof k === 'string' ? redactSecrets(k) : k;
      if (typeof v === 'string') dst[key] = redactSecrets(v);
      else if (typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON !== 'function') {
        const child = Array.isArray(v) ? [] : {};
        dst[key] = child;
        stack.push([v, child as Record<string, unknown>]);
      } else dst[key] = v;
    }
  }
  return root as T;
}
