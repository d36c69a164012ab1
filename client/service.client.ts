import { Readable } from 'node:stream';

/**
 * The shop's side of the service's HTTP interface: a token from
 * /oauth/token (client_secret_basic), JSON requests with it, and streamed
 * uploads. Nothing here knows about the service's database.
 */

export interface Connection {
  url: string;
  clientId: string;
  clientSecret: string;
}

/** A problem worth one line to the user (bad credentials, unreachable service, an error answer). */
export class ClientError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The message of any of the service's error bodies (interface §3, §4, §11). */
export function errorText(body: unknown, status: number): string {
  if (body && typeof body === 'object' && 'error' in body) {
    const { error, error_description: description } = body as { error: unknown; error_description?: unknown };
    if (typeof description === 'string') return `${String(error)}: ${description}`;
    if (typeof error === 'string') return error;
    if (error && typeof error === 'object' && 'message' in error) return String((error as { message: unknown }).message);
  }
  return `HTTP ${status}`;
}

const parseJson = (text: string): unknown => {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
};

export class ServiceClient {
  private token: string | undefined;
  readonly base: string;

  constructor(private readonly connection: Connection) {
    this.base = connection.url.replace(/\/+$/, '');
  }

  /** fetch, with an unreachable service reported as one line naming the address and where it came from. */
  private async send(path: string, init: RequestInit & { duplex?: 'half' }): Promise<Response> {
    try {
      return await fetch(`${this.base}${path}`, init);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new ClientError(`cannot reach the service at ${this.base} (--url or SYNC_URL): ${reason}`);
    }
  }

  /** Gets the token now, so that refused credentials are told before anything else starts (an upload, its progress). */
  async authenticate(): Promise<void> {
    await this.accessToken();
  }

  private async accessToken(): Promise<string> {
    if (this.token) return this.token;
    const basic = Buffer.from(`${encodeURIComponent(this.connection.clientId)}:${encodeURIComponent(this.connection.clientSecret)}`);
    const response = await this.send('/oauth/token', {
      method: 'POST',
      headers: { authorization: `Basic ${basic.toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    const body = parseJson(await response.text()) as { access_token?: string } | undefined;
    if (response.status === 401)
      throw new ClientError(
        'the service refused the client credentials (--client-id/--client-secret or SYNC_CLIENT_ID/SYNC_CLIENT_SECRET)',
        401,
      );
    if (!response.ok || !body?.access_token)
      throw new ClientError(`token request failed: ${errorText(body, response.status)}`, response.status);
    this.token = body.access_token;
    return this.token;
  }

  /** An authorised request; a token that expired meanwhile is renewed once. */
  async request(method: string, path: string, init: RequestInit & { duplex?: 'half' } = {}, retry = true): Promise<Response> {
    const token = await this.accessToken();
    const response = await this.send(path, {
      ...init,
      method,
      headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
    });
    if (response.status === 401 && retry && !(init.body && typeof init.body === 'object')) {
      this.token = undefined;
      return this.request(method, path, init, false);
    }
    return response;
  }

  /** GET a JSON document; an error answer becomes a ClientError with the service's message. */
  async getJson<T>(path: string): Promise<T> {
    const response = await this.request('GET', path);
    const body = parseJson(await response.text());
    if (!response.ok) throw new ClientError(errorText(body, response.status), response.status);
    return body as T;
  }

  /** POSTs a stream as the body (chunked), answering the parsed JSON. */
  async postStream(
    path: string,
    body: Readable,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: unknown; location: string | null }> {
    const response = await this.request('POST', path, {
      headers,
      body: Readable.toWeb(body) as unknown as BodyInit,
      duplex: 'half',
    });
    return { status: response.status, body: parseJson(await response.text()), location: response.headers.get('location') };
  }
}
