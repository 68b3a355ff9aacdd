/**
 * Webhook SSRF: a `callback_url` must not make Pigeon connect to its own host, a private network
 * or a cloud metadata service, whichever way the address is written. Every target in the table is
 * refused by the webhook dispatcher (WEBHOOK_ALLOW_PRIVATE=false, the default) before any
 * connection: a listener on 127.0.0.1 that every loopback form points at sees none.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { WebhookDispatcher, type Resolver } from '../../src/webhooks/dispatcher.ts';

/** Names a hostile receiver could control in DNS, and what they resolve to. */
const DNS: Record<string, { address: string; family: number }[]> = {
  'internal.attacker.test': [{ address: '10.0.0.5', family: 4 }],
  'metadata.attacker.test': [{ address: '169.254.169.254', family: 4 }],
  'loopback6.attacker.test': [{ address: '::1', family: 6 }],
  'mapped.attacker.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  // One public and one private address: the connection could be steered to the private one.
  'mixed.attacker.test': [
    { address: '93.184.215.14', family: 4 },
    { address: '192.168.0.10', family: 4 },
  ],
  localhost: [{ address: '127.0.0.1', family: 4 }],
};

const resolver: Resolver = async (hostname) => {
  const answer = DNS[hostname];
  if (!answer) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return answer;
};

/** Host parts of `https://<host>:<port>/`, each a way of writing a refused address. */
const TARGETS: [string, string][] = [
  ['127.0.0.1', 'IPv4 loopback'],
  ['127.53.1.9', 'IPv4 loopback, not .1'],
  ['[::1]', 'IPv6 loopback'],
  ['[0:0:0:0:0:0:0:1]', 'IPv6 loopback, long form'],
  ['10.0.0.1', 'private 10/8'],
  ['172.16.5.4', 'private 172.16/12'],
  ['192.168.1.1', 'private 192.168/16'],
  ['[fd00::1]', 'IPv6 unique local'],
  ['[fec0::1]', 'IPv6 site-local'],
  ['169.254.1.1', 'link-local'],
  ['[fe80::1]', 'IPv6 link-local'],
  ['169.254.169.254', 'cloud metadata'],
  ['[fd00:ec2::254]', 'AWS metadata over IPv6'],
  ['100.100.100.200', 'Alibaba metadata'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['0.0.0.0', 'unspecified'],
  ['[::]', 'IPv6 unspecified'],
  ['[::ffff:127.0.0.1]', 'IPv4-mapped loopback'],
  ['[::ffff:7f00:1]', 'IPv4-mapped loopback, hex'],
  ['[::ffff:169.254.169.254]', 'IPv4-mapped metadata'],
  ['[::ffff:10.0.0.1]', 'IPv4-mapped private'],
  ['[::127.0.0.1]', 'IPv4-compatible loopback'],
  ['[64:ff9b::7f00:1]', 'NAT64 loopback'],
  ['[2002:7f00:1::]', '6to4 loopback'],
  ['2130706433', 'decimal 127.0.0.1'],
  ['2852039166', 'decimal 169.254.169.254'],
  ['3232235777', 'decimal 192.168.1.1'],
  ['0177.0.0.1', 'octal 127.0.0.1'],
  ['0251.0376.0251.0376', 'octal 169.254.169.254'],
  ['017700000001', 'octal 127.0.0.1, one number'],
  ['0x7f.0.0.1', 'hex 127.0.0.1'],
  ['0x7f000001', 'hex 127.0.0.1, one number'],
  ['0xa9.0xfe.0xa9.0xfe', 'hex 169.254.169.254'],
  ['127.1', 'short 127.0.0.1'],
  ['10.1', 'short 10.0.0.1'],
  ['localhost', 'localhost'],
  ['internal.attacker.test', 'a name resolving to a private address'],
  ['metadata.attacker.test', 'a name resolving to the metadata address'],
  ['loopback6.attacker.test', 'a name resolving to ::1'],
  ['mapped.attacker.test', 'a name resolving to an IPv4-mapped loopback'],
  ['mixed.attacker.test', 'a name resolving to a public and a private address'],
];

describe('webhook SSRF guard', () => {
  let listener: Server;
  let port: number;
  let connections = 0;
  before(async () => {
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => listener.close(() => resolve())));

  test(`all ${TARGETS.length} forms of a private, loopback or metadata address are refused, none connected to`, async () => {
    const dispatcher = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: false, resolver });
    try {
      for (const [host, what] of TARGETS) {
        const url = `https://${host}:${port}/hook`;
        const out = await dispatcher.deliver({ url, body: '{}', eventId: 'evt_ssrf', secrets: ['whsec_test'], now: Date.now() });
        assert.equal(out.ok, false, `${what}: ${url}`);
        assert.match(out.error ?? '', /^refused/, `${what}: ${url} gave ${out.error}`);
      }
    } finally {
      dispatcher.close();
    }
    assert.equal(connections, 0);
  });

  test('the table is not vacuous: with WEBHOOK_ALLOW_PRIVATE=true the loopback forms do connect', async () => {
    const dispatcher = new WebhookDispatcher({ timeoutMs: 2000, allowPrivate: true, resolver });
    try {
      for (const host of ['127.0.0.1', '2130706433', '0177.0.0.1', '[::ffff:127.0.0.1]', 'localhost']) {
        const before = connections;
        const out = await dispatcher.deliver({ url: `https://${host}:${port}/hook`, body: '{}', eventId: 'evt_ssrf', secrets: ['whsec_test'], now: Date.now() });
        assert.equal(out.ok, false); // the listener hangs up: not a webhook receiver
        assert.doesNotMatch(out.error ?? '', /^refused/, host);
        assert.equal(connections, before + 1, `${host} reached the listener`);
      }
    } finally {
      dispatcher.close();
    }
  });
});
