// Redaction of secret-looking strings before anything reaches the logs or an export.
// Patterns: provider-style API keys, bearer tokens, JWTs, and long hex/base64 tokens after a
// key-like word. Deliberately conservative: it must not eat ordinary text.

const PATTERNS: RegExp[] = [
  /\b(sk|rk|pk|tml|ghp|gho|github_pat|xox[abpr]|AKIA)[-_][A-Za-z0-9_-]{12,}\b/g,
  /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g,
  /((?:api[_-]?key|token|secret|password)["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/-]{12,}/gi,
];

export function redactSecrets(text: string): string {
  let out = text;
  for (const p of PATTERNS) out = out.replace(p, (m, prefix?: string) => (typeof prefix === 'string' && p.source.startsWith('((?:api') ? `${prefix}[REDACTED]` : '[REDACTED]'));
  return out;
}
