/**
 * Every error the service raises on purpose is an AppError. The API's error
 * middleware turns each subclass into the exact body of docs/interface.md; anything
 * else is unexpected and becomes the generic 500.
 */
export abstract class AppError extends Error {
  abstract readonly status: number;
  readonly headers: Record<string, string> = {};
  /**
   * A 5xx that is how the service is set up rather than a fault (admin disabled):
   * logged at info, without a stack, since every such request would repeat it.
   */
  readonly setupState: boolean = false;

  /** The JSON body sent to the client. */
  abstract body(): unknown;
}

/** An error answered as `{"error": {"message": …}}`. */
export abstract class MessageObjectError extends AppError {
  body(): unknown {
    return { error: { message: this.message } };
  }
}

/** An error answered as `{"error": "…"}`. */
export abstract class MessageStringError extends AppError {
  body(): unknown {
    return { error: this.message };
  }
}

export type ValidationErrorClass = 'missing_parameters' | 'unknown_parameters' | 'invalid_parameters';

export class ValidationError extends AppError {
  readonly status = 400;

  constructor(
    readonly errorClass: ValidationErrorClass,
    readonly parameters: string[],
    message?: string,
  ) {
    super(message ?? ValidationError.defaultMessage(errorClass, parameters));
  }

  static defaultMessage(errorClass: ValidationErrorClass, parameters: string[]): string {
    const names = parameters.join(', ');
    switch (errorClass) {
      case 'missing_parameters':
        return `Missing required parameters: ${names}`;
      case 'unknown_parameters':
        return `Unknown parameters: ${names}`;
      case 'invalid_parameters':
        return `Invalid parameters: ${names}`;
    }
  }

  body() {
    return { error: { message: this.message, [this.errorClass]: this.parameters } };
  }
}

export class BadRequestError extends MessageObjectError {
  readonly status = 400;
}

export class LanguageNotFoundError extends MessageObjectError {
  readonly status = 404;
  constructor(readonly languageId: string) {
    super(`Language '${languageId}' not found`);
  }
}

export class RecordNotFoundError extends MessageStringError {
  readonly status = 404;
  /** @param resource the human name, e.g. "Product" or "Shopping cart". */
  constructor(readonly resource: string) {
    super(`${resource} not found`);
  }
}

export class RouteNotFoundError extends MessageStringError {
  readonly status = 404;
  constructor() {
    super('Not found');
  }
}

/** A 401, which always says how to authenticate (`WWW-Authenticate`). */
abstract class ChallengeError extends MessageStringError {
  readonly status = 401;
  constructor(challenge: string, message: string) {
    super(message);
    this.headers['WWW-Authenticate'] = challenge;
  }
}

export class UnauthorizedError extends ChallengeError {
  constructor() {
    super(
      'Bearer realm="api", error="invalid_token"',
      'A valid access token is required: request a token at /oauth/token and send it as "Authorization: Bearer <token>"',
    );
  }
}

/** RFC 6749 5.2 codes, and `slow_down` (RFC 8628 3.5, registered for the token endpoint) for too many failed attempts. */
export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'slow_down' | 'server_error';

export class OAuthError extends AppError {
  constructor(
    readonly status: number,
    readonly code: OAuthErrorCode,
    description: string,
    headers: Record<string, string> = {},
  ) {
    super(description);
    Object.assign(this.headers, headers, { 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  }
  body() {
    return { error: this.code, error_description: this.message };
  }
}

export class HttpStatusError extends MessageObjectError {
  constructor(
    readonly status: number,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(message);
    Object.assign(this.headers, headers);
  }
}

/** 503 for a moment: what the answer needs is still being written, so the client retries a second later. */
export class RetryShortlyError extends MessageObjectError {
  readonly status = 503;
  override readonly headers = { 'Retry-After': '1' };
}

export class AdminUnavailableError extends MessageStringError {
  readonly status = 503;
  // Said once as a warning at start (api/server.ts); each refused request is only an info line.
  override readonly setupState = true;
  constructor() {
    super('The admin interface is disabled: set ADMIN_PASSWORD to enable it');
  }
}

export class AdminUnauthorizedError extends ChallengeError {
  constructor() {
    super('Basic realm="admin", charset="UTF-8"', 'Admin credentials are required');
  }
}

/** Too many failed admin sign-ins from this address or for this user (auth/sign-in.guard.ts). */
export class AdminSignInBlockedError extends MessageStringError {
  readonly status = 429;
  constructor(retryAfterS: number, reason: 'failures' | 'in_progress' = 'failures') {
    super(`Too many ${reason === 'failures' ? 'failed sign-ins' : 'sign-ins in progress'}: retry after ${retryAfterS} s`);
    this.headers['Retry-After'] = String(retryAfterS);
  }
}

export const GENERIC_500_BODY = { error: 'The request cannot be processed at this moment' } as const;
