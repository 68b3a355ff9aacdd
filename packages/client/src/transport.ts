/**
 * One HTTP exchange with the API, with the retry policy: exponential backoff with jitter, never
 * sooner than `Retry-After`. A 429 is always retried (the server refuses it before doing any
 * work); a network error, timeout or 5xx only when the call is safe to repeat: a GET, or a POST
 * carrying an Idempotency-Key, which the server answers at most once.
 */
import { errorFromResponse, parseRetryAfter, PigeonConnectionError } from './errors.ts';

export interface ClientOptions {
  /** The API key, exactly as issued (`pk_live_…`). */
  apiKey: string;
  /** The server's address, with or without the `/v1` suffix. Default `http://localhost:3000`. */
  baseUrl?: string;
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number;
  /** First backoff delay; it doubles per retry. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Longest wait before a retry; a `Retry-After` asking for more is not waited for. Default 30 s. */
  retryMaxDelayMs?: number;
  /** Per-attempt time limit. Default 30 s. */
  timeoutMs?: number;
  /** The fetch to use; default the runtime's global one. */
  fetch?: typeof fetch;
  /** How to wait between attempts; replaceable so tests can move a fake clock. */
  sleep?: (ms: number) => Promise<void>;
  /** Source of jitter in [0, 1). */
  random?: () => number;
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Sent as `Idempotency-Key`, the same on every attempt; makes a POST safe to repeat. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Transport {
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #maxRetries: number;
  readonly #baseDelay: number;
  readonly #maxDelay: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;

  constructor(options: ClientOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new TypeError('apiKey is required');
    this.#apiKey = options.apiKey;
    this.#baseUrl = (options.baseUrl ?? 'http://localhost:3000').replace(/\/+$/, '').replace(/\/v1$/, '');
    this.#maxRetries = options.maxRetries ?? 3;
    this.#baseDelay = options.retryBaseDelayMs ?? 500;
    this.#maxDelay = options.retryMaxDelayMs ?? 30_000;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
  }

  /** Backoff before retry number `attempt + 1`: half fixed, half random, so clients spread out. */
  backoff(attempt: number): number {
    const ceiling = Math.min(this.#maxDelay, this.#baseDelay * 2 ** attempt);
    return ceiling / 2 + this.#random() * (ceiling / 2);
  }

  url(path: string, query?: RequestSpec['query']): string {
    const url = new URL(`${this.#baseUrl}/v1${path}`);
    for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    return url.toString();
  }

  async request(spec: RequestSpec): Promise<RawResponse> {
    // PUT and DELETE set a state: repeating them changes nothing more.
    const repeatable = spec.method !== 'POST' || spec.idempotencyKey !== undefined;
    const headers: Record<string, string> = { authorization: `Bearer ${this.#apiKey}`, accept: 'application/json' };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    const url = this.url(spec.path, spec.query);
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);

    for (let attempt = 0; ; attempt++) {
      const canRetry = attempt < this.#maxRetries;
      let response: Response;
      let text: string;
      try {
        const timeout = AbortSignal.timeout(this.#timeoutMs);
        const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
        response = await this.#fetch(url, { method: spec.method, headers, body: payload, signal });
        text = await response.text();
      } catch (error) {
        // The caller's own abort is final; anything else means no (complete) answer arrived.
        if (spec.signal?.aborted) throw error;
        if (!(repeatable && canRetry)) {
          throw new PigeonConnectionError(`${spec.method} ${url} got no answer: ${(error as Error).message}`, { cause: error });
        }
        await this.#sleep(this.backoff(attempt));
        continue;
      }
      const body = parseJson(text);
      if (response.ok) return { status: response.status, headers: response.headers, body };

      const code = (body as { code?: unknown } | null)?.code;
      const retryable =
        response.status === 429 ||
        (response.status === 409 && code === 'idempotency_in_progress') ||
        (repeatable && [500, 502, 503, 504].includes(response.status));
      if (retryable && canRetry) {
        const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
        const wait = Math.max(this.backoff(attempt), (retryAfter ?? 0) * 1000);
        if (wait <= this.#maxDelay) {
          await this.#sleep(wait);
          continue;
        }
      }
      throw errorFromResponse(response.status, body, response.headers);
    }
  }
}

function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
