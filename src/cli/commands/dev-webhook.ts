/**
 * `pigeon dev-webhook`: a local HTTPS receiver for trying webhooks on one machine. Webhooks go
 * only to https:// URLs, and a loopback target is refused unless WEBHOOK_ALLOW_PRIVATE=true, so
 * this makes a self-signed certificate (with openssl), listens on 127.0.0.1, prints the settings
 * the server needs, and prints every event it receives, checking its signature when given the
 * account's webhook secret.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { verifyWebhookSignature } from '../../domain/webhook-signature.ts';
import { UsageError, type Command } from '../command.ts';

/** The certificate and key in `dir`, made once and reused, so NODE_EXTRA_CA_CERTS stays valid. */
export function ensureCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  if (existsSync(cert) && existsSync(key)) return { cert, key };
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '825', '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1', '-keyout', key, '-out', cert],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') throw new UsageError('dev-webhook makes its certificate with openssl, which is not installed (Debian: apt-get install openssl).');
    throw new Error(`openssl could not make the certificate: ${e.stderr?.toString().trim() ?? e.message}`);
  }
  return { cert, key };
}

export const devWebhookCommands: Record<string, Command> = {
  'dev-webhook': {
    usage: 'dev-webhook [--port P] [--secret S] [--dir D]',
    description:
      'Run a local HTTPS webhook receiver on 127.0.0.1 for development, and print each event it receives.\n\n' +
      'It makes a self-signed certificate once (with openssl) and prints the settings the Pigeon server needs to trust\n' +
      'and reach it: WEBHOOK_ALLOW_PRIVATE=true, NODE_EXTRA_CA_CERTS=<its certificate>, and the callback_url to send with.\n' +
      'With --secret (the account\'s webhook_secret, from `pigeon account show ID`) each signature is checked.\n' +
      'With --json it prints one JSON object with the settings, then one per event.',
    options: { port: 'string', secret: 'string', dir: 'string' },
    optionHelp: {
      port: 'port to listen on (default 9443; 0 picks a free one)',
      secret: "the account's webhook signing secret (whsec_...), to check X-Pigeon-Signature",
      dir: 'where the certificate is kept (default ./data/dev-webhook)',
    },
    standalone: true,
    async run(_ctx, { values }, out) {
      const portText = (values.port as string | undefined) ?? '9443';
      if (!/^\d+$/.test(portText) || Number(portText) > 65535) throw new UsageError('--port must be a whole number from 0 to 65535.');
      const secret = values.secret as string | undefined;
      if (secret !== undefined && !secret.startsWith('whsec_')) throw new UsageError('--secret is the account\'s webhook_secret, which starts with whsec_ (pigeon account show ID).');
      const dir = resolve((values.dir as string | undefined) ?? 'data/dev-webhook');
      const files = ensureCertificate(dir);
      const server = createServer({ cert: readFileSync(files.cert), key: readFileSync(files.key) }, (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const header = String(req.headers['x-pigeon-signature'] ?? '');
          const signature = secret === undefined ? 'not checked (no --secret)' : verifyWebhookSignature(body, header, secret, { nowSeconds: Date.now() / 1000 }) ? 'valid' : 'INVALID';
          let event: unknown = body;
          try {
            event = JSON.parse(body);
          } catch {
            // Printed as received.
          }
          const record = { received_at: new Date().toISOString(), method: req.method, path: req.url, event_id: req.headers['x-pigeon-event-id'] ?? null, signature, body: event };
          out.print(record, `${record.received_at} ${req.method} ${req.url} event ${record.event_id ?? '-'} signature ${signature}\n${typeof event === 'string' ? event : JSON.stringify(event, null, 2)}`);
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
        });
      });
      await new Promise<void>((resolveListen, reject) => {
        server.once('error', (err: NodeJS.ErrnoException) =>
          reject(err.code === 'EADDRINUSE' ? new UsageError(`Port ${portText} on 127.0.0.1 is in use: choose another with --port.`) : err),
        );
        server.listen(Number(portText), '127.0.0.1', () => resolveListen());
      });
      const port = (server.address() as AddressInfo).port;
      const callbackUrl = `https://127.0.0.1:${port}/webhook`;
      const settings = { callback_url: callbackUrl, certificate: files.cert, env: { WEBHOOK_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: files.cert } };
      out.print(
        settings,
        [
          `Webhook receiver listening on ${callbackUrl}`,
          '',
          'Start (or restart) the Pigeon server with these two settings, so it may call this machine and trusts the certificate:',
          '',
          `  WEBHOOK_ALLOW_PRIVATE=true NODE_EXTRA_CA_CERTS=${files.cert} npm start`,
          '',
          'and send with',
          '',
          `  "callback_url": "${callbackUrl}"`,
          '',
          secret ? 'Signatures are checked with the secret given.' : 'Give --secret whsec_... (pigeon account show ID) to check signatures.',
          'Events appear below as they arrive. Ctrl-C stops.',
        ].join('\n'),
      );
      const stop = () => server.close(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    },
  },
};
