// Redaction of secret-looking strings before anything reaches the logs or an export.
// Patterns: provider-style API keys, bearer tokens, JWTs, and long hex/base64 tokens after a
// key-like word. Deliberately conservative: it must not eat ordinary text.

/** [pattern, replacement]: a key=value secret keeps its key ($1) */
const PATTERNS: [RegExp, string][] = [
  [/\b(?:sk|rk|pk|tml|ghp|gho|github_pat|xox[abpr]|AKIA)[-_][A-Za-z0-9_-]{12,}\b/g, '[REDACTED]'],
  [/\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/g, '[REDACTED]'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g, '[REDACTED]'],
  [/((?:api[_-]?key|token|secret|password)["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/-]{12,}/gi, '$1[REDACTED]'],
];

export function redactSecrets(text: string): string {
  return PATTERNS.reduce((out, [pattern, replacement]) => out.replace(pattern, replacement), text);
}
