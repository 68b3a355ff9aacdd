/**
 * One webhook attempt: sign the stored body, resolve and check the target, POST it over HTTPS to
 * exactly the checked address, and classify what came back (DECISIONS.md §4, spec §6.3). It never
 * throws: every outcome, including a refused target, is a {@link DeliveryOutcome} to record.
 */
import { lookup as dnsLookup } from 'node:dns';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { signWebhookWithSecrets } from '../domain/webhook-signature.ts';
import { formBody, twilioSignature } from '../domain/twilio-signature.ts';
import { MAX_TWIML_BYTES } from '../domain/twiml.ts';
import { classifyAddress, isReservedName } from './address-guard.ts';

/**
 * What one attempt produced. `ok` is true only for exactly HTTP 200 within the timeout (any 2xx
 * for a Twilio-style request).
 */
export interface DeliveryOutcome {
  ok: boolean;
  /** The receiver's status code, or null when no response arrived. */
  httpStatus: number | null;
  /** Why the attempt failed, for people (recorded on the attempt); null on success. */
  error: string | null;
  /** From the start of the attempt (including the DNS lookup) to the response headers or the failure. */
  latencyMs: number;
  /**
   * For a Twilio-style request that asked for it: the answer's body as text, read up to one
   * byte past MAX_TWIML_BYTES (a longer one is cut there, and refused by its reader).
   */
  answer?: string;
}

/**
 * A Twilio-style request instead of Pigeon's JSON event (DECISIONS.md §12): the parameters go
 * form-encoded, signed with `X-Twilio-Signature` keyed with the account's Auth Token.
 */
export interface TwilioStyle {
  params: Readonly<Record<string, string>>;
  authToken: string;
  /** Read the answer's body (TwiML) and return it with the outcome. */
  readAnswer: boolean;
}

export interface DeliveryRequest {
  url: string;
  /** The exact JSON body stored with the event; sent byte for byte on every attempt. */
  body: string;
  eventId: string;
  /** Current secret first; during a rotation the previous one too (both signatures are sent). */
  secrets: readonly string[];
  /** Milliseconds since the epoch, for the signature's `t`. */
  now: number;
  /** Send Twilio-style instead: `body` and `secrets` are then unused. */
  twilio?: TwilioStyle;
}

/** Resolves a host name to its addresses (dns.lookup with `all: true` by default). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface DispatcherOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Sockets kept per host; the worker's per-host cap matches it. */
  maxSocketsPerHost?: number;
  /** Trust exactly these CAs instead of the default store (tests); production uses NODE_EXTRA_CA_CERTS. */
  ca?: string | Buffer;
  resolver?: Resolver;
  /**
   * How long a DNS answer is reused (default 1000 ms). Every attempt still checks the address it
   * connects to; a cached answer only saves the lookup for the many events of a busy receiver.
   */
  dnsCacheMs?: number;
  userAgent?: string;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

type Target = { address: string; family: number } | { refused: string };

/**
 * Sends webhook attempts over one keep-alive agent, so a busy receiver costs one TLS handshake per
 * connection rather than per event.
 */
export class WebhookDispatcher {
  readonly #opts: DispatcherOptions;
  readonly #agent: https.Agent;
  readonly #resolve: Resolver;
  readonly #dnsCache = new Map<string, { until: number; addresses: { address: string; family: number }[] }>();

  constructor(opts: DispatcherOptions) {
    this.#opts = opts;
    this.#resolve = opts.resolver ?? systemResolver;
    const perHost = opts.maxSocketsPerHost ?? 64;
    // An idle socket is closed before a typical server's keep-alive timeout (5 s in Node) would
    // close it under us, which would turn the next attempt into a spurious reset.
    this.#agent = new https.Agent({ keepAlive: true, maxSockets: perHost, maxFreeSockets: perHost, scheduling: 'lifo', timeout: 4000 });
  }

  /** Closes idle connections. */
  close(): void {
    this.#agent.destroy();
  }

  /** Makes one attempt; resolves within `timeoutMs` (plus scheduling slack), never rejects. */
  deliver(req: DeliveryRequest): Promise<DeliveryOutcome> {
    const started = performance.now();
    const { timeoutMs } = this.#opts;
    return new Promise<DeliveryOutcome>((resolve) => {
      let settled = false;
      let request: ReturnType<typeof https.request> | null = null;
      const finish = (ok: boolean, httpStatus: number | null, error: string | null, answer?: string) => {
        if (settled) return;
        settled = true;
        resolve({ ok, httpStatus, error, latencyMs: Math.round(performance.now() - started), ...(answer !== undefined ? { answer } : {}) });
      };
      // One deadline for the whole attempt: lookup, connect, TLS, request and response headers.
      // It also bounds reading the (ignored) response body, so a trickling receiver cannot hold a socket.
      const deadline = setTimeout(() => {
        finish(false, null, `timeout: no response within ${timeoutMs} ms`);
        request?.destroy();
      }, timeoutMs);

      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        clearTimeout(deadline);
        return finish(false, null, 'refused: the URL is not valid');
      }
      if (url.protocol !== 'https:') {
        clearTimeout(deadline);
        return finish(false, null, 'refused: only https:// URLs receive webhooks');
      }
      const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;

      this.#target(hostname).then((target) => {
        if (settled) return;
        if ('refused' in target) {
          clearTimeout(deadline);
          return finish(false, null, target.refused);
        }
        const twilio = req.twilio;
        const body = Buffer.from(twilio ? formBody(twilio.params) : req.body, 'utf8');
        const signatureHeaders: Record<string, string> = twilio
          ? {
              'content-type': 'application/x-www-form-urlencoded',
              'x-twilio-signature': twilioSignature(twilio.authToken, req.url, twilio.params),
              'i-twilio-idempotency-token': req.eventId,
            }
          : { 'content-type': 'application/json', 'x-pigeon-event-id': req.eventId, 'x-pigeon-signature': signWebhookWithSecrets(req.body, req.secrets, Math.floor(req.now / 1000)) };
        // The connection goes to the address that was checked, whatever DNS says a moment later.
        const pinned: LookupFunction = (_host, options, callback) => {
          if (options.all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
          else callback(null, target.address, target.family);
        };
        request = https.request({
          protocol: 'https:',
          host: hostname,
          port: url.port === '' ? 443 : Number(url.port),
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          agent: this.#agent,
          lookup: pinned,
          ...(this.#opts.ca ? { ca: this.#opts.ca } : {}),
          headers: {
            'content-length': String(body.length),
            'user-agent': this.#opts.userAgent ?? 'Pigeon-Webhooks/1',
            ...signatureHeaders,
          },
        });
        request.on('response', (res) => {
          const status = res.statusCode ?? 0;
          const ok = twilio ? status >= 200 && status < 300 : status === 200;
          if (ok && twilio?.readAnswer) return readAnswer(res, status);
          finish(ok, status, ok ? null : `HTTP ${status}`);
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) res.destroy();
          });
          res.on('end', () => clearTimeout(deadline));
          res.on('error', () => clearTimeout(deadline));
          res.on('close', () => clearTimeout(deadline));
        });
        request.on('error', (err) => {
          clearTimeout(deadline);
          finish(false, null, describeError(err as NodeJS.ErrnoException));
        });
        // The answer (TwiML) is read within the attempt's deadline, and no further than one byte
        // past the largest its reader takes.
        const readAnswer = (res: import('node:http').IncomingMessage, status: number) => {
          const chunks: Buffer[] = [];
          let read = 0;
          const done = () => {
            clearTimeout(deadline);
            finish(true, status, null, Buffer.concat(chunks).subarray(0, MAX_TWIML_BYTES + 1).toString('utf8'));
          };
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            read += chunk.length;
            if (read > MAX_TWIML_BYTES) {
              done();
              res.destroy();
            }
          });
          res.on('end', done);
          res.on('error', () => {
            clearTimeout(deadline);
            finish(false, status, 'the answer was cut off');
          });
          res.on('close', () => {
            clearTimeout(deadline);
            finish(false, status, 'the answer was cut off');
          });
        };
        request.end(body);
      }).catch((err: Error) => {
        // A bug, not the receiver's doing; still an outcome to record rather than a crash.
        clearTimeout(deadline);
        request?.destroy();
        finish(false, null, `internal error: ${err.message}`.slice(0, 300));
      });
    });
  }

  async #lookup(hostname: string): Promise<{ address: string; family: number }[]> {
    const ttl = this.#opts.dnsCacheMs ?? 1000;
    const now = performance.now();
    const hit = this.#dnsCache.get(hostname);
    if (hit && hit.until > now) return hit.addresses;
    const addresses = await this.#resolve(hostname);
    if (ttl > 0) {
      if (this.#dnsCache.size >= 10_000) this.#dnsCache.clear();
      this.#dnsCache.set(hostname, { until: now + ttl, addresses });
    }
    return addresses;
  }

  /** Resolves and checks the target; every address a name resolves to must be allowed. */
  async #target(hostname: string): Promise<Target> {
    let addresses: { address: string; family: number }[];
    if (isIP(hostname)) {
      addresses = [{ address: hostname, family: isIP(hostname) }];
    } else {
      if (!this.#opts.allowPrivate && isReservedName(hostname)) {
        return { refused: `refused: ${hostname} is a special-use name (RFC 2606/6761); set WEBHOOK_ALLOW_PRIVATE=true to allow` };
      }
      try {
        addresses = await this.#lookup(hostname);
      } catch (err) {
        return { refused: `DNS lookup of ${hostname} failed (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
      }
      if (addresses.length === 0) return { refused: `DNS lookup of ${hostname} returned no address` };
    }
    if (!this.#opts.allowPrivate) {
      for (const a of addresses) {
        const cls = classifyAddress(a.address);
        // A name with one public and one private address could be steered to the private one.
        if (cls !== 'public') return { refused: `refused: ${hostname} resolves to ${a.address} (${cls}); set WEBHOOK_ALLOW_PRIVATE=true to allow` };
      }
    }
    return addresses[0]!;
  }
}

const TLS_CODES = /^(CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH|EPROTO)/;

/** A short, stable description of a transport failure, recorded on the attempt. */
export function describeError(err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (code === 'ECONNRESET') return err.message === 'socket hang up' ? 'connection closed before a response' : 'connection reset by the receiver';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ETIMEDOUT') return 'connection timed out';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `network unreachable (${code})`;
  if (TLS_CODES.test(code)) return `TLS failure: ${code}`;
  return `${code || 'error'}: ${err.message}`.slice(0, 300);
}
