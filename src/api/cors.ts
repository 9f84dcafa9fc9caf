// CORS, for browser clients on other origins: off unless origins are configured (`serve --cors-origin`).
// Allowed origins get Access-Control-Allow-Origin on every response, and OPTIONS preflights are answered
// (before the API key is checked: browsers send no credentials on a preflight) with the methods and the
// headers they asked for.

/** The allowed origins from a comma-separated list; '*' allows any. Origins compare without a trailing slash. */
export function parseOrigins(spec: string | undefined): string[] {
  return (spec ?? '').split(',').map((s) => s.trim().replace(/\/+$/, '')).filter((s) => s.length > 0);
}

/** Headers for a response to `origin`, or null when CORS is off or the origin is not allowed. */
export function corsHeaders(allowed: readonly string[], origin: string | undefined): Record<string, string> | null {
  if (allowed.length === 0 || !origin) return null;
  const any = allowed.includes('*');
  if (!any && !allowed.includes(origin.replace(/\/+$/, ''))) return null;
  return {
    'access-control-allow-origin': any ? '*' : origin,
    'access-control-expose-headers': 'content-type',
    ...(any ? {} : { vary: 'Origin' }),
  };
}

/** The extra headers of a preflight answer. */
export function preflightHeaders(requestedHeaders: string | undefined): Record<string, string> {
  return {
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': requestedHeaders?.trim() || 'authorization, content-type, x-session-id, x-turn-type, x-session-done',
    'access-control-max-age': '600',
  };
}
