/**
 * Crash safety of inbound messages: a real `pigeon serve` (CARRIER=smpp) takes a stream of
 * mobile-originated deliver_sm from an SMSC on 127.0.0.1 (single-part ones, and three-part ones
 * with a UDH whose parts come out of order), with a window of unanswered PDUs, and is killed with
 * SIGKILL mid-stream several times and restarted. Like a real SMSC, this one sends again, once
 * the ESME binds again, every deliver_sm it got no deliver_sm_resp for (or a temporary error).
 *
 * Afterwards, from the database: every message the SMSC got a successful answer for is stored
 * (never lost), so is every message it sent, multi-part ones whole, each for the account that holds
 * its number (or unrouted); a message is stored twice only if one of its PDUs was unanswered when
 * a connection was cut (committed, then killed before the answer left: the SMSC's resend is a
 * second copy that nothing in an MO deliver_sm lets Pigeon recognise; docs/smpp.md says why). A
 * multi-part message is never stored twice: a repeated part of a stored message is recognised.
 *
 * On SQLite by default (a temp file); on a PostgreSQL schema of its own under `npm run test:pg`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as smpp from 'smpp';
import type { Store } from '../../src/store/connect.ts';
import { createAccount } from '../../src/services/accounts/accounts.ts';
import { setEventsUrl } from '../../src/services/accounts/events-url.ts';
import { assignNumber } from '../../src/services/numbers/numbers.ts';
import { freePort, startPigeon, type PigeonProcess } from '../helpers/processes.ts';
import { processDatabase, serviceContext, testDialect } from '../helpers/test-store.ts';

/** Messages sent; every fourth is a three-part one. */
const MESSAGES = 400;
const PARTS = 3;
/** deliver_sm the SMSC keeps unanswered at most (a real SMSC's window toward the ESME). */
const WINDOW = 40;
/** Each bind is killed once the SMSC got this many answers on it: mid-stream, window full. */
const KILL_AFTER_ACKS = [90, 130, 70, 150];

/** Account A (with an events URL), account B (without), and a number nobody holds. */
const NUMBER_A = '447700900950';
const NUMBER_B = '447700900951';
const NUMBER_UNROUTED = '447700900959';

const isMultipart = (n: number) => n % 4 === 3;
/** A sender per message: a handset's concatenation reference is its own, so no two messages share one. */
const senderOf = (n: number) => `447911${String(n).padStart(6, '0')}`;
const numberOf = (n: number) => (n % 10 === 9 ? NUMBER_UNROUTED : n % 2 === 0 ? NUMBER_A : NUMBER_B);
const partText = (n: number, seq: number) => `mo ${n} part ${seq}/${PARTS};`;
/** Some senders text STOP: their opt-out and its one confirmation are written with the message. */
const isStop = (n: number) => n % 25 === 12 && !isMultipart(n);
const fullText = (n: number) => (isMultipart(n) ? Array.from({ length: PARTS }, (_, i) => partText(n, i + 1)).join('') : isStop(n) ? 'STOP' : `mo ${n} single`);

interface Pdu {
  n: number;
  /** The part number, or 0 for a single-part message. */
  seq: number;
  fields: Record<string, unknown>;
}

function pdusOf(n: number): Pdu[] {
  const base = { source_addr_ton: 1, source_addr_npi: 1, source_addr: senderOf(n), dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: numberOf(n), data_coding: 0 };
  if (!isMultipart(n)) return [{ n, seq: 0, fields: { ...base, esm_class: 0, short_message: fullText(n) } }];
  const udh = (seq: number) => Buffer.from([0x05, 0x00, 0x03, n % 256, PARTS, seq]);
  // Out of order: the last part first.
  return [3, 1, 2].map((seq) => ({ n, seq, fields: { ...base, esm_class: 0x40, short_message: Buffer.concat([udh(seq), Buffer.from(partText(n, seq), 'latin1')]) } }));
}

/**
 * Streams the PDUs over whichever session is bound, at most WINDOW unanswered; what a connection
 * takes with it unanswered goes back to the front of the queue for the next bind.
 */
class MoSmsc {
  readonly queue: Pdu[];
  /** Messages (by n) with at least one PDU unanswered when its connection closed. */
  readonly cutOff = new Set<number>();
  /** PDUs unanswered when their connection closed, over all kills. */
  cutOffPdus = 0;
  /** Answers with status 0 and with another status. */
  acked = 0;
  refused = 0;
  readonly ackedPdus = new Set<string>();
  binds = 0;
  /** Called on each successful answer with the count on this bind. */
  onAck: (countOnBind: number) => void = () => {};
  #server: smpp.Server;
  #session: smpp.Session | null = null;
  #inFlight = new Set<Pdu>();
  #ackOnBind = 0;
  #paused = false;
  #allDone: (() => void) | null = null;

  constructor(pdus: Pdu[]) {
    this.queue = pdus;
    this.#server = smpp.createServer((session) => this.#accept(session));
  }

  async listen(): Promise<number> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#session?.destroy();
    await closed;
  }

  /** Stops sending until the next bind (the ESME is being killed). */
  pause(): void {
    this.#paused = true;
  }

  whenAllAnswered(): Promise<void> {
    if (this.queue.length === 0 && this.#inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#allDone = resolve));
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  #accept(session: smpp.Session): void {
    session.on('error', () => {});
    session.on('enquire_link', (pdu: smpp.PDU) => session.send(pdu.response()));
    session.on('unbind', (pdu: smpp.PDU) => {
      session.send(pdu.response());
      session.close();
    });
    session.on('submit_sm', (pdu: smpp.PDU) => session.send(pdu.response({ message_id: 'unused' })));
    session.on('bind_transceiver', (pdu: smpp.PDU) => {
      if (pdu.system_id !== 'pigeon' || pdu.password !== 'secret') {
        session.send(pdu.response({ command_status: 0x0d }));
        return;
      }
      this.binds++;
      this.#session = session;
      this.#ackOnBind = 0;
      this.#paused = false;
      session.send(pdu.response({ system_id: 'mo-smsc' }));
      this.#pump();
    });
    session.on('close', () => {
      if (this.#session !== session) return;
      this.#session = null;
      // What this connection took with it unanswered is sent again after the next bind, first.
      const lost = [...this.#inFlight];
      this.#inFlight.clear();
      this.cutOffPdus += lost.length;
      for (const p of lost) this.cutOff.add(p.n);
      this.queue.unshift(...lost);
    });
  }

  #pump(): void {
    const session = this.#session;
    while (session && !this.#paused && this.#inFlight.size < WINDOW && this.queue.length > 0) {
      const p = this.queue.shift()!;
      this.#inFlight.add(p);
      session.deliver_sm(p.fields, (resp: smpp.PDU) => {
        // An answer that comes after its connection was given up is not trusted.
        if (this.#session !== session || !this.#inFlight.delete(p)) return;
        if (resp.command_status === 0) {
          this.acked++;
          this.ackedPdus.add(`${p.n}.${p.seq}`);
          this.onAck(++this.#ackOnBind);
        } else {
          // A temporary error: sent again later, as a real SMSC would.
          this.refused++;
          this.queue.push(p);
        }
        if (this.queue.length === 0 && this.#inFlight.size === 0) this.#allDone?.();
        this.#pump();
      });
    }
  }
}

describe(`SIGKILL while inbound messages stream in over SMPP (${testDialect})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeon-inbound-crash-'));
  const database = processDatabase('inbound_crash', dir);
  let server: PigeonProcess | null = null;
  let smsc: MoSmsc;
  let store: Store;

  before(async () => {
    store = await database.open();
  });

  after(async () => {
    await server?.kill();
    await smsc?.stop();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every answered message is stored, every sent one eventually, whole, twice only if cut off', { timeout: 90_000 }, async () => {
    const ctx = serviceContext(store, { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true' });
    const a = await createAccount(ctx, { name: 'Inbound A', email: 'a@example.com', credits: 0 });
    const b = await createAccount(ctx, { name: 'Inbound B', email: 'b@example.com', credits: 0 });
    await assignNumber(ctx, a.id, `+${NUMBER_A}`);
    await assignNumber(ctx, b.id, `+${NUMBER_B}`);
    // Nothing listens there: the events are queued and their deliveries fail, which is not tested here.
    await setEventsUrl(ctx, a.id, 'https://127.0.0.1:9/events');

    smsc = new MoSmsc(Array.from({ length: MESSAGES }, (_, n) => pdusOf(n)).flat());
    const env = {
      DATABASE_URL: database.url,
      PORT: String(await freePort()),
      CARRIER: 'smpp',
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(await smsc.listen()),
      SMPP_SYSTEM_ID: 'pigeon',
      SMPP_PASSWORD: 'secret',
      SMPP_RECONNECT_MIN_MS: '20',
      SMPP_RECONNECT_MAX_MS: '200',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    };

    const cutAtKill: number[] = [];
    for (const threshold of KILL_AFTER_ACKS) {
      server = await startPigeon(['serve'], env);
      const running = server;
      await new Promise<void>((resolve) => {
        smsc.onAck = (count) => {
          if (count !== threshold) return;
          // At once, from the answer's callback: the window is full, parts of it read, parts being
          // stored. The bind is the delivery process's: the server and it die together.
          running.signalAll('SIGKILL');
          smsc.pause();
          cutAtKill.push(smsc.inFlight);
          resolve();
        };
      });
      smsc.onAck = () => {};
      await server.kill();
      server = null;
    }
    server = await startPigeon(['serve'], env);
    await smsc.whenAllAnswered();
    assert.equal(await server.stop(), 0, server.output().slice(-3000));
    server = null;

    const totalPdus = MESSAGES + (MESSAGES / 4) * (PARTS - 1);
    console.log(
      `# ${totalPdus} deliver_sm, ${KILL_AFTER_ACKS.length} kills (unanswered at each: ${cutAtKill.join(', ')}), ` +
        `${smsc.cutOffPdus} PDUs cut off over ${smsc.cutOff.size} messages, ${smsc.refused} temporary errors, ${smsc.binds} binds`,
    );
    assert.equal(smsc.ackedPdus.size, totalPdus, 'every PDU was eventually answered with status 0');
    assert.ok(smsc.cutOffPdus > 0 && cutAtKill.every((c) => c > 0), 'no PDU was unanswered at a kill: the test did not test anything');

    const rows = await store.db.selectFrom('inbound_messages').select(['id', 'sender', 'recipient', 'body', 'segments', 'incomplete', 'account_id']).execute();
    const bySender = new Map<string, typeof rows>();
    for (const r of rows) bySender.set(r.sender, [...(bySender.get(r.sender) ?? []), r]);
    // A part waiting for the rest would be stored as a fragment 60 s later: every group must be done.
    const waiting = await store.db.selectFrom('inbound_parts').select(['group_key', 'seq']).groupBy(['group_key', 'seq']).execute();
    const done = new Set(waiting.filter((p) => p.seq === 0).map((p) => p.group_key));
    assert.deepEqual([...new Set(waiting.map((p) => p.group_key))].filter((g) => !done.has(g)), [], 'parts left waiting for parts already stored');

    let duplicates = 0;
    for (let n = 0; n < MESSAGES; n++) {
      const stored = bySender.get(`+${senderOf(n)}`) ?? [];
      // Never lost (the SMSC got an answer for every PDU of every message), and whole.
      assert.ok(stored.length >= 1, `message ${n} is not stored`);
      for (const r of stored) {
        assert.equal(r.body, fullText(n), `message ${n} is not stored whole`);
        assert.equal(r.recipient, `+${numberOf(n)}`);
        assert.equal(r.account_id, numberOf(n) === NUMBER_A ? a.id : numberOf(n) === NUMBER_B ? b.id : null, `message ${n}'s account`);
        assert.equal(r.segments, isMultipart(n) ? PARTS : 1);
        assert.equal(Number(r.incomplete), 0);
      }
      if (stored.length > 1) {
        // Committed, then killed before the answer left: the SMSC's resend is a second copy.
        assert.ok(smsc.cutOff.has(n), `message ${n} is stored ${stored.length} times though none of its PDUs was cut off`);
        // A repeated part of a stored multi-part message is recognised (its group is kept, done).
        assert.ok(!isMultipart(n), `multi-part message ${n} is stored ${stored.length} times`);
        duplicates += stored.length - 1;
      }
    }
    const sent = new Set(Array.from({ length: MESSAGES }, (_, n) => `+${senderOf(n)}`));
    assert.deepEqual(rows.filter((r) => !sent.has(r.sender)), [], 'stored messages that were never sent');
    console.log(`# stored: ${rows.length} rows for ${MESSAGES} messages, ${duplicates} of them second copies of single-part messages cut off at a kill`);

    // STOP: opted out of the number's account, with one confirmation (a second copy changes nothing, so it gets none).
    const stops = Array.from({ length: MESSAGES }, (_, n) => n).filter(isStop);
    assert.ok(stops.length >= 10 && stops.some((n) => numberOf(n) === NUMBER_A) && stops.some((n) => numberOf(n) === NUMBER_B));
    const optOuts = await store.db.selectFrom('opt_outs').select(['account_id', 'phone', 'source']).execute();
    const confirmations = await store.db.selectFrom('messages').select(['account_id', 'recipient', 'sender', 'charged']).execute();
    assert.deepEqual(
      optOuts.map((o) => [o.account_id, o.phone, o.source]).sort(),
      stops.map((n) => [numberOf(n) === NUMBER_A ? a.id : b.id, `+${senderOf(n)}`, 'keyword']).sort(),
    );
    assert.deepEqual(
      confirmations.map((m) => [m.account_id, m.recipient, m.sender, Number(m.charged)]).sort(),
      stops.map((n) => [numberOf(n) === NUMBER_A ? a.id : b.id, `+${senderOf(n)}`, `+${numberOf(n)}`, 0]).sort(),
    );

    // Each message stored for the account with an events URL raised its sms.received, in the same commit.
    const events = await store.db.selectFrom('webhook_events').select(['inbound_id', 'event', 'account_id']).execute();
    assert.ok(events.every((e) => e.account_id === a.id));
    assert.deepEqual(
      events.filter((e) => e.event === 'recipient.opted_out').map((e) => e.inbound_id).length,
      stops.filter((n) => numberOf(n) === NUMBER_A).length,
    );
    assert.deepEqual(
      events.filter((e) => e.event === 'sms.received').map((e) => e.inbound_id).sort(),
      rows.filter((r) => r.account_id === a.id).map((r) => r.id).sort(),
    );
  });
});
