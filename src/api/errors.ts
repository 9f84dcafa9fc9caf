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
