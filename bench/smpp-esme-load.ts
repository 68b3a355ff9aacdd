/**
 * The ESMEs of bench/smpp-server.bench.ts, in their own process (as a customer's platform would
 * be): SMPP binds to Pigeon's listener with the `smpp` package's client. Talks to its parent over
 * IPC, one command at a time:
 *
 * - `submit`: `binds` transceiver binds, each keeping `window` submit_sm unanswered, for `seconds`;
 *   answers every deliver_sm at once; reports the submits answered 0 per second and the p50/p99
 *   of their answers.
 * - `queue`: `count` submits asking for receipts over one transmitter bind (no receiver bound, so
 *   the receipts wait in Pigeon's queue).
 * - `drain`: binds one receiver and times the arrival of `count` receipts.
 */
import { connect, type Socket } from 'node:net';
import smpp, { type PDU, type Session } from 'smpp';
import { CMD, cstring, encodePdu, PduFramer, RESP } from '../src/smpp-server/pdu.ts';
import { percentile } from './lib.ts';

interface Command {
  cmd: 'submit' | 'raw-submit' | 'queue' | 'drain' | 'stop';
  port: number;
  systemId: string;
  password: string;
  binds?: number;
  window?: number;
  seconds?: number;
  count?: number;
  /** raw-submit: submits a second in all, evenly (an open loop within the windows); flat out without. */
  rate?: number;
  /** raw-submit: ask for receipts (registered_delivery 1); without, none are asked for. */
  receipts?: boolean;
}

/** A bound session; `onDeliver` listens before the bind, since deliveries may follow its answer at once. */
async function bind(port: number, type: string, systemId: string, password: string, onDeliver?: (session: Session, pdu: PDU) => void): Promise<Session> {
  const session = smpp.connect({ host: '127.0.0.1', port });
  session.on('error', () => {});
  session.on('enquire_link', (pdu: PDU) => session.send(pdu.response()));
  if (onDeliver) session.on('deliver_sm', (pdu: PDU) => onDeliver(session, pdu));
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  const answer = await new Promise<PDU>((resolve) => (session as unknown as Record<string, (o: object, cb: (p: PDU) => void) => void>)[type]!({ system_id: systemId, password }, resolve));
  if (answer.command_status !== 0) throw new Error(`${type} answered 0x${answer.command_status.toString(16)}`);
  return session;
}

function submit(session: Session, i: number, registeredDelivery: number): Promise<number> {
  return new Promise((resolve) =>
    session.submit_sm(
      {
        source_addr_ton: 5,
        source_addr: 'Bench',
        dest_addr_ton: 1,
        dest_addr_npi: 1,
        destination_addr: `1415555${String(1000 + (i % 9000)).padStart(4, '0')}`,
        registered_delivery: registeredDelivery,
        data_coding: 0,
        short_message: `Your code is ${String(100000 + (i % 900000))}`,
      },
      (pdu: PDU) => resolve(pdu.command_status),
    ),
  );
}

async function close(sessions: Session[]): Promise<void> {
  await Promise.all(
    sessions.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.once('close', () => resolve());
          s.unbind(() => s.close());
          setTimeout(() => (s.close(), resolve()), 2000).unref();
        }),
    ),
  );
}

async function submitLoad(c: Command) {
  let receipts = 0;
  const sessions = await Promise.all(
    Array.from({ length: c.binds! }, () =>
      bind(c.port, 'bind_transceiver', c.systemId, c.password, (s, pdu) => {
        receipts++;
        s.send(pdu.response());
      }),
    ),
  );
  const latencies: number[] = [];
  let ok = 0;
  let refused = 0;
  let n = 0;
  const started = Date.now();
  const until = started + c.seconds! * 1000;
  const lane = async (s: Session) => {
    while (Date.now() < until) {
      const at = performance.now();
      const status = await submit(s, n++, 1);
      latencies.push(performance.now() - at);
      if (status === 0) ok++;
      else refused++;
    }
  };
  await Promise.all(sessions.flatMap((s) => Array.from({ length: c.window! }, () => lane(s))));
  const ms = Date.now() - started;
  const receiptsAtEnd = receipts;
  await close(sessions);
  latencies.sort((a, b) => a - b);
  return { perSecond: (ok / ms) * 1000, refused, p50: percentile(latencies, 50), p99: percentile(latencies, 99), receipts: receiptsAtEnd, receiptsPerSecond: (receiptsAtEnd / ms) * 1000 };
}

/**
 * The `submit` load without the `smpp` package: PDUs written and read as bytes, the submit_sm
 * bodies made once per destination, so that the load generator spends as little CPU per submit as
 * autocannon spends per HTTP request (the package's client spent more than the server it loaded).
 */
async function rawSubmitLoad(c: Command) {
  const registered = c.receipts === false ? 0 : 1;
  const bodies = Array.from({ length: 9000 }, (_, i) =>
    Buffer.concat([
      cstring(''),
      Buffer.from([5, 0]),
      cstring('Bench'),
      Buffer.from([1, 1]),
      cstring(`1415555${String(1000 + i).padStart(4, '0')}`),
      Buffer.from([0, 0, 0]),
      cstring(''),
      cstring(''),
      // registered_delivery, replace_if_present 0, data_coding 0, sm_default_msg_id 0
      Buffer.from([registered, 0, 0, 0]),
      (() => {
        const text = Buffer.from(`Your code is ${String(100000 + i)}`, 'latin1');
        return Buffer.concat([Buffer.from([text.length]), text]);
      })(),
    ]),
  );
  const latencies: number[] = [];
  let ok = 0;
  let refused = 0;
  let receipts = 0;
  let n = 0;
  let started = 0;
  let until = 0;
  const lanes = await Promise.all(
    Array.from({ length: c.binds! }, async () => {
      const socket = connect({ host: '127.0.0.1', port: c.port });
      socket.setNoDelay(true);
      const framer = new PduFramer();
      const waiting = new Map<number, (status: number) => void>();
      let seq = 0;
      socket.on('data', (chunk: Buffer) => {
        for (const framed of framer.push(chunk)) {
          if (framed.kind !== 'pdu') throw new Error(`the server sent ${framed.kind} bytes`);
          const { pdu } = framed;
          if (pdu.id === CMD.deliver_sm) {
            receipts++;
            socket.write(encodePdu(CMD.deliver_sm | RESP, 0, pdu.seq, cstring('')));
          } else if (pdu.id === CMD.enquire_link) socket.write(encodePdu(CMD.enquire_link | RESP, 0, pdu.seq));
          else waiting.get(pdu.seq)?.(pdu.status), waiting.delete(pdu.seq);
        }
      });
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      const request = (id: number, body: Buffer) =>
        new Promise<number>((resolve) => {
          seq = seq >= 0x7fffffff ? 1 : seq + 1;
          waiting.set(seq, resolve);
          socket.write(encodePdu(id, 0, seq, body));
        });
      const bound = await request(CMD.bind_transceiver, Buffer.concat([cstring(c.systemId), cstring(c.password), cstring(''), Buffer.from([0x34, 0, 0]), cstring('')]));
      if (bound !== 0) throw new Error(`bind_transceiver answered 0x${bound.toString(16)}`);
      return { socket, request };
    }),
  );
  let ticket = 0;
  const lane = async (l: (typeof lanes)[number]) => {
    while (Date.now() < until) {
      if (c.rate) {
        const due = started + (ticket++ * 1000) / c.rate;
        if (due >= until) return;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      }
      const at = performance.now();
      const status = await l.request(CMD.submit_sm, bodies[n++ % bodies.length]!);
      latencies.push(performance.now() - at);
      if (status === 0) ok++;
      else refused++;
    }
  };
  started = Date.now();
  until = started + c.seconds! * 1000;
  await Promise.all(lanes.flatMap((l) => Array.from({ length: c.window! }, () => lane(l))));
  const ms = Date.now() - started;
  const receiptsAtEnd = receipts;
  await Promise.all(lanes.map((l) => Promise.race([l.request(CMD.unbind, Buffer.alloc(0)), new Promise((r) => setTimeout(r, 2000))]).then(() => l.socket.destroy())));
  latencies.sort((a, b) => a - b);
  return { perSecond: (ok / ms) * 1000, refused, p50: percentile(latencies, 50), p99: percentile(latencies, 99), receipts: receiptsAtEnd, receiptsPerSecond: (receiptsAtEnd / ms) * 1000 };
}

async function queue(c: Command) {
  const session = await bind(c.port, 'bind_transmitter', c.systemId, c.password);
  let next = 0;
  let ok = 0;
  const lane = async () => {
    while (next < c.count!) if ((await submit(session, next++, 1)) === 0) ok++;
  };
  await Promise.all(Array.from({ length: 50 }, lane));
  await close([session]);
  return { ok };
}

async function drain(c: Command) {
  const started = Date.now();
  let got = 0;
  let all!: () => void;
  const done = new Promise<void>((resolve) => (all = resolve));
  const session = await bind(c.port, 'bind_receiver', c.systemId, c.password, (s, pdu) => {
    s.send(pdu.response());
    if (++got === c.count) all();
  });
  await done;
  const ms = Date.now() - started;
  await close([session]);
  return { perSecond: (got / ms) * 1000, ms };
}

process.on('message', (c: Command) => {
  if (c.cmd === 'stop') process.exit(0);
  const run = c.cmd === 'submit' ? submitLoad(c) : c.cmd === 'raw-submit' ? rawSubmitLoad(c) : c.cmd === 'queue' ? queue(c) : drain(c);
  run.then(
    (result) => process.send!(result),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
});
process.send!({ ready: true });
