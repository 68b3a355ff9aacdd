/**
 * An application written for Twilio, using only the official `twilio` package, that runs against
 * Pigeon with one changed line (`client.api.baseUrl`). It sends a message with a status callback,
 * answers messages to its number with TwiML, and accepts only requests whose
 * `X-Twilio-Signature` the package's `validateRequest` verifies.
 *
 * The `twilio` module is passed in (run directly, this file loads `twilio`), so the same code is
 * tested against both major versions of the package.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { pathToFileURL } from 'node:url';

/** What this app uses of the `twilio` package. */
export interface TwilioPackage {
  (accountSid: string, authToken: string): TwilioClient;
  validateRequest(authToken: string, signature: string, url: string, params: Record<string, string>): boolean;
  twiml: { MessagingResponse: new () => { message(body: string): unknown; toString(): string } };
}

export interface TwilioClient {
  api: { baseUrl: string };
  messages: {
    create(params: { to: string; from: string; body: string; statusCallback?: string }): Promise<{ sid: string; status: string }>;
    (sid: string): { fetch(): Promise<{ sid: string; status: string; errorCode: number | null }> };
  };
}

export interface AppOptions {
  twilio: TwilioPackage;
  accountSid: string;
  authToken: string;
  /** Where the API is: Pigeon's address instead of https://api.twilio.com. */
  apiBaseUrl: string;
  /** Where this app is reached from outside (its callbacks are signed over this URL). */
  publicUrl: string;
}

export interface StatusUpdate {
  sid: string;
  status: string;
  errorCode?: string;
}

export interface TwilioApp {
  client: TwilioClient;
  /** Sends `body` with this app's status callback. */
  send(to: string, from: string, body: string): Promise<{ sid: string; status: string }>;
  handler: http.RequestListener;
  statuses: StatusUpdate[];
  received: { from: string; to: string; body: string }[];
  /** Requests refused for a bad signature. */
  forged: number;
}

const MAX_BODY = 64 * 1024;

function readForm(req: http.IncomingMessage): Promise<Record<string, string> | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        resolve(null);
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')))));
    req.on('error', () => resolve(null));
  });
}

export function createTwilioApp(options: AppOptions): TwilioApp {
  const { twilio } = options;
  const client = twilio(options.accountSid, options.authToken);
  client.api.baseUrl = options.apiBaseUrl; // the one line that moves the app to Pigeon
  const app: TwilioApp = {
    client,
    statuses: [],
    received: [],
    forged: 0,
    send: (to, from, body) => client.messages.create({ to, from, body, statusCallback: `${options.publicUrl}/status` }),
    handler: (req, res) => {
      void (async () => {
        const params = req.method === 'POST' ? await readForm(req) : null;
        if (!params) return res.writeHead(400).end();
        const signature = String(req.headers['x-twilio-signature'] ?? '');
        if (!twilio.validateRequest(options.authToken, signature, `${options.publicUrl}${req.url ?? '/'}`, params)) {
          app.forged++;
          return res.writeHead(403).end();
        }
        if (req.url === '/status') {
          app.statuses.push({ sid: params.MessageSid ?? '', status: params.MessageStatus ?? '', ...(params.ErrorCode ? { errorCode: params.ErrorCode } : {}) });
          return res.writeHead(204).end();
        }
        if (req.url === '/sms') {
          app.received.push({ from: params.From ?? '', to: params.To ?? '', body: params.Body ?? '' });
          const reply = new twilio.twiml.MessagingResponse();
          // Answer questions only; anything else is acknowledged without a reply.
          if ((params.Body ?? '').trim().endsWith('?')) reply.message(`Thanks for asking! We will call you back about: ${params.Body}`);
          return res.writeHead(200, { 'content-type': 'text/xml' }).end(reply.toString());
        }
        res.writeHead(404).end();
      })();
    },
  };
  return app;
}

/** Run directly: serve the callbacks over HTTPS and, with SEND_TO, send one message. */
async function main(): Promise<void> {
  const env = process.env;
  const need = (name: string): string => {
    const value = env[name];
    if (!value) throw new Error(`${name} is required`);
    return value;
  };
  const twilio = createRequire(import.meta.url)('twilio') as TwilioPackage;
  const app = createTwilioApp({
    twilio,
    accountSid: need('TWILIO_ACCOUNT_SID'),
    authToken: need('TWILIO_AUTH_TOKEN'),
    apiBaseUrl: need('PIGEON_URL'),
    publicUrl: need('PUBLIC_URL'),
  });
  const port = Number(env.PORT ?? 8443);
  const server = https.createServer({ cert: readFileSync(need('TLS_CERT')), key: readFileSync(need('TLS_KEY')) }, (req, res) => {
    app.handler(req, res);
    res.on('finish', () => console.log(`${req.method} ${req.url} ${res.statusCode}`));
  });
  server.listen(port, '127.0.0.1', () => console.log(`callbacks on https://127.0.0.1:${port}`));
  if (env.SEND_TO) {
    const message = await app.send(env.SEND_TO, need('SEND_FROM'), env.SEND_BODY ?? 'Hello from a Twilio app running on Pigeon');
    console.log(`sent ${message.sid} (${message.status})`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
