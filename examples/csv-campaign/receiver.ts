/**
 * A webhook receiver: checks each request's signature with `verifyWebhook`, skips repeats by
 * `X-Pigeon-Event-Id`, answers 200 at once and prints the event.
 *
 *   PIGEON_WEBHOOK_SECRET=whsec_... PORT=8443 TLS_CERT=cert.pem TLS_KEY=key.pem \
 *     node --import tsx examples/csv-campaign/receiver.ts
 *
 * Pigeon only delivers to https:// URLs, so give it TLS_CERT and TLS_KEY (or put it behind a TLS
 * proxy); without them it listens on plain HTTP, for local trials.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { pathToFileURL } from 'node:url';
import { PigeonWebhookError, verifyWebhook, type VerifyOptions, type WebhookEvent } from '../../packages/client/src/index.ts';

const MAX_BODY_BYTES = 64 * 1024;

export interface ReceiverOptions {
  secret: string | string[];
  onEvent: (event: WebhookEvent, eventId: string) => void;
  /** Ids already handled; a real receiver keeps them in its database (a unique column). */
  seen?: Set<string>;
  /** Passed to `verifyWebhook` (tolerance, clock). */
  verify?: VerifyOptions;
}

/** The request handler, usable with `http.createServer` or `https.createServer`. */
export function webhookHandler(options: ReceiverOptions): http.RequestListener {
  const seen = options.seen ?? new Set<string>();
  return (req, res) => {
    const answer = (status: number, text: string) => res.writeHead(status, { 'content-type': 'text/plain' }).end(text);
    if (req.method !== 'POST') return answer(405, 'POST only');
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', async () => {
      try {
        // The signature covers the exact bytes received: verify before any parsing.
        const event = await verifyWebhook(Buffer.concat(chunks).toString('utf8'), req.headers, options.secret, options.verify);
        const eventId = String(req.headers['x-pigeon-event-id'] ?? '');
        // A retry of an event already handled: acknowledge it again, do nothing else.
        if (eventId && seen.has(eventId)) return answer(200, 'duplicate');
        if (eventId) seen.add(eventId);
        answer(200, 'ok');
        options.onEvent(event, eventId);
      } catch (err) {
        if (err instanceof PigeonWebhookError) return answer(err.reason === 'invalid_payload' ? 400 : 401, err.reason);
        answer(500, 'error');
      }
    });
  };
}

function main(): void {
  const secret = process.env.PIGEON_WEBHOOK_SECRET;
  if (!secret) {
    console.error('set PIGEON_WEBHOOK_SECRET (the operator shows it with `pigeon account show <id>`)');
    process.exit(2);
  }
  const handler = webhookHandler({
    secret: secret.split(','),
    onEvent: (e, id) => console.log(`${e.timestamp} ${id} ${e.event} ${e.message_id} ${e.to} ${e.status}${e.error_code ? ` (${e.error_code})` : ''}`),
  });
  const port = Number(process.env.PORT ?? 8443);
  const tls = process.env.TLS_CERT && process.env.TLS_KEY ? { cert: readFileSync(process.env.TLS_CERT), key: readFileSync(process.env.TLS_KEY) } : null;
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  server.listen(port, process.env.HOST ?? '127.0.0.1', () => console.error(`listening on ${tls ? 'https' : 'http'}://${process.env.HOST ?? '127.0.0.1'}:${port}/`));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
