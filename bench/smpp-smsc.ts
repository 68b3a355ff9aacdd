/**
 * The benchmark's SMSC in its own process (as a real one would be): test/smpp/smsc.ts answering
 * every submit and sending a DELIVRD receipt at once. Talks to its parent over IPC.
 */
import { TestSmsc } from '../test/smpp/smsc.ts';

const smsc = new TestSmsc({ systemId: 'bench', password: 'bench' });
smsc.autoReceipt = { stat: 'DELIVRD', format: 'tlv' };
const port = await smsc.listen();
process.send!({ port });
process.on('message', (msg: { cmd: string }) => {
  if (msg.cmd === 'stats') {
    const acknowledged = smsc.acknowledged;
    process.send!({ acknowledged: acknowledged.length, duplicates: acknowledged.length - new Set(acknowledged.map((s) => s.destination)).size });
  } else if (msg.cmd === 'stop') {
    void smsc.stop().finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
