// Errors in OpenAI's shape: {error: {message, type, param, code}} with the matching HTTP status.

export class ApiError extends Error {
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
  constructor(status: number, message: string, opts: { type?: string; param?: string | null; code?: string | null } = {}) {
    super(message);
    this.status = status;
    this.type = opts.type ?? (status === 401 ? 'authentication_error' : status === 404 ? 'not_found_error' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error');
    this.param = opts.param ?? null;
    this.code = opts.code ?? null;
  }

  toJSON() { return { error: { message: this.message, type: this.type, param: this.param, code: this.code } }; }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = null) => new ApiError(400, message, { param, code });

/** The client went away before its request was read or served: nothing to answer, nothing to log. */
export class ClientGone extends Error {
  override name = 'ClientGone';
  constructor() { super('the client disconnected'); }
}

/**
 * A full disk (ENOSPC from the file system, SQLITE_FULL from the database) as the answer a client
 * can act on: 507 Insufficient Storage, saying what is wrong. Anything else: null.
 */
export function storageError(e: unknown): ApiError | null {
  const err = e as { code?: string; errcode?: number; message?: string };
  const full = err?.code === 'ENOSPC' || err?.code === 'EDQUOT' || (err?.errcode !== undefined && (err.errcode & 0xff) === 13) || /database or disk is full|SQLITE_FULL/i.test(err?.message ?? '');
  if (!full) return null;
  return new ApiError(507, `the server cannot record this request: its disk is full (${err.message}); free space where the data folder is, then retry`, { code: 'insufficient_storage' });
}
