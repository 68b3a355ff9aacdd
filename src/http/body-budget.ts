/**
 * A cap on the request bodies of this process being read and parsed at once. BODY_LIMIT_BYTES
 * bounds one body, not how many arrive together: 150 clients each sending 4 MiB would have the
 * process hold 600 MiB of bodies, and as much again in the text and values parsed from them,
 * before a single field is looked at. Past the budget, a large body waits before it is read: its
 * bytes stay in the kernel's socket buffers and TCP slows the sender down, while small bodies
 * (every ordinary send) never wait and never count.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Bodies up to this size pass freely: they are the ordinary traffic. */
const SMALL_BODY_BYTES = 64 * 1024;

export function installBodyBudget(app: FastifyInstance, budgetBytes: number, bodyLimitBytes: number): void {
  let inFlight = 0;
  const waiting: { bytes: number; admit: () => void }[] = [];

  const admitWaiting = () => {
    // First come, first served; one larger than the whole budget goes alone.
    while (waiting.length > 0 && (inFlight === 0 || inFlight + waiting[0]!.bytes <= budgetBytes)) {
      const next = waiting.shift()!;
      inFlight += next.bytes;
      next.admit();
    }
  };

  /**
   * Resolves once `bytes` fit. They are given back when the response ends (answered, timed out or
   * the connection gone); a request whose connection goes while it waits leaves the queue and
   * goes on, to be ended by Fastify as any aborted request.
   */
  const acquire = (reply: FastifyReply, bytes: number): Promise<void> =>
    new Promise<void>((resolve) => {
      let held = false;
      const entry = {
        bytes,
        admit: () => {
          held = true;
          resolve();
        },
      };
      reply.raw.once('close', () => {
        if (held) {
          inFlight -= bytes;
          admitWaiting();
          return;
        }
        const at = waiting.indexOf(entry);
        if (at >= 0) waiting.splice(at, 1);
        resolve();
      });
      if (waiting.length === 0 && (inFlight === 0 || inFlight + bytes <= budgetBytes)) {
        inFlight += bytes;
        entry.admit();
      } else {
        waiting.push(entry);
      }
    });

  app.addHook('preParsing', async (request, reply, payload) => {
    const length = request.headers['content-length'];
    // Without a length (chunked), a body may be as large as the limit allows.
    const bytes = length !== undefined ? Number(length) || 0 : request.headers['transfer-encoding'] !== undefined ? bodyLimitBytes : 0;
    // Over the limit, it is refused unread (413): nothing to wait for.
    if (bytes > SMALL_BODY_BYTES && bytes <= bodyLimitBytes) await acquire(reply, bytes);
    return payload;
  });
}
