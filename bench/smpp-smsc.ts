/**
 * The benchmark's SMSC in its own process (as a real one would be): test/smpp/smsc.ts answering
 * every submit and sending a DELIVRD receipt at once. Talks to its parent over IPC.
 */
import { TestSmsc } from '../test/smpp/smsc.ts';

const smsc = new TestSmsc({ systemId: 'bench', password: 'bench' });
smsc.autoReceipt = { stat: 'DELIVRD', format: 'tlv' };
const port = await smsc.listen();
process.send!({ port });
/** Sends `count` inbound messages to `to`, at most `window` unanswered at a time; answers how it went. */
async function inbound(count: number, window: number, to: string): Promise<{ ok: number; failed: number; ms: number }> {
  const started = Date.now();
  let next = 0;
  let ok = 0;
  let failed = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const status = await smsc.deliver({
        source_addr_ton: 1,
        source_addr_npi: 1,
        source_addr: `4479${String(10_000_000 + i).slice(-8)}`,
        dest_addr_ton: 1,
        dest_addr_npi: 1,
        destination_addr: to.replace(/^\+/, ''),
        esm_class: 0,
        data_coding: 0,
        short_message: `Inbound bench message ${i}`,
      });
      if (status === 0) ok++;
      else failed++;
    }
  };
  await Promise.all(Array.from({ length: window }, lane));
  return { ok, failed, ms: Date.now() - started };
}

process.on('message', (msg: { cmd: string; count?: number; window?: number; to?: string }) => {
  if (msg.cmd === 'inbound') {
    void inbound(msg.count ?? 0, msg.window ?? 50, msg.to ?? '').then((result) => process.send!(result));
  } else if (msg.cmd === 'stats') {
    const acknowledged = smsc.acknowledged;
    process.send!({ acknowledged: acknowledged.length, duplicates: acknowledged.length - new Set(acknowledged.map((s) => s.destination)).size });
  } else if (msg.cmd === 'stop') {
    void smsc.stop().finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
