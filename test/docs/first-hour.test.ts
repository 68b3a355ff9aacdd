/**
 * The first hour, as the README and docs/guides/webhooks.md ("Trying it on one machine") walk a
 * newcomer through it, with nothing else: the operator's commands make an account, a key and an
 * approved Sender ID; `pigeon dev-webhook` starts a receiver; the server starts with exactly the
 * settings the receiver printed; a send with the printed `callback_url` ends in a delivered
 * webhook whose signature the receiver finds valid. Everything on 127.0.0.1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { walkthrough } from '../helpers/docs-walkthrough.ts';
import { waitFor } from '../helpers/wait-for.ts';

/** Polls until `probe` gives a value; at the deadline the message carries `context()` (the processes' output). */
function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, context: () => string): Promise<T> {
  return waitFor(probe, { timeout: 60_000, interval: 100, message: () => `${what}:\n${context()}` }) as Promise<T>;
}

test('README and the webhooks guide, followed as written, reach a delivered, validly signed webhook on loopback', async () => {
  const machine = await walkthrough({ prefix: 'pigeon-first-hour-' });
  const { url, cli } = machine;
  try {
    // The quick start: `npm start` (here `pigeon serve`, which `npm start` runs).
    let server = await machine.serve();

    // README walk-through, steps 1 to 4.
    const { accountId, key } = machine.newCustomer({ email: 'ops@acme.test', label: 'production' });
    await machine.approvedSender(accountId, key, 'Acme');

    // The webhooks guide: the receiver, started with the account's secret as `account show` gives it.
    const secret = cli('account', 'show', accountId).webhook_secret as string;
    assert.match(secret, /^whsec_/);
    const receiver = machine.spawn(['dev-webhook', '--secret', secret, '--port', '0', '--dir', join(machine.dir, 'dev-webhook'), '--json']);
    const lines = () =>
      receiver
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>);
    const settings = await until('the receiver settings', () => lines()[0], receiver.output);

    // Restart the server with the two settings the receiver printed, and nothing else.
    await server.stop();
    server = await machine.serve(settings.env);

    const sent = await fetch(`${url}/v1/sms/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+14155552671', from: 'Acme', message: 'Hello', callback_url: settings.callback_url }),
    });
    const body = (await sent.json()) as Record<string, any>;
    assert.equal(sent.status, 200, JSON.stringify(body));

    const delivered = await until(
      'sms.delivered at the receiver',
      () => lines().find((l) => l.body?.event === 'sms.delivered' && l.body?.message_id === body.message_id),
      () => `receiver:\n${receiver.output()}\nserver:\n${server.output()}`,
    );
    assert.equal(delivered.signature, 'valid');
    const events = lines().filter((l) => l.body?.message_id === body.message_id);
    assert.ok(events.some((l) => l.body.event === 'sms.sent' && l.signature === 'valid'), JSON.stringify(events));
  } finally {
    await machine.close();
  }
});
