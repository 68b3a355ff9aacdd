/**
 * The parts of long messages submitted over SMPP (UDH or SAR), kept per SMPP user until the last
 * arrives. The message's id is chosen with its first arriving part, so every part can be answered
 * at once with its own id (the first part's id is the message's, the others add `.N`). Parts that
 * wait past the timeout are dropped, nothing charged, and their receipts say REJECTD.
 */
import type { Context } from '../services/context.ts';
import type { PartsRejection } from '../services/smpp-access/smpp-outbox.ts';
import { newId } from '../util/ids.ts';
import { decodeText, type SubmitContent } from './submit-content.ts';

interface Group {
  messageId: string;
  total: number;
  parts: Map<number, { payload: Buffer; dataCoding: number }>;
  timer: NodeJS.Timeout;
  systemId: string;
  registeredDelivery: number;
  addresses: { sourceAddr: string; sourceTon: number; destinationAddr: string };
}

export type PartAdded =
  | { kind: 'waiting'; partId: string }
  | { kind: 'complete'; messageId: string; partId: string; partIds: string[]; text: string };

export function partIdOf(messageId: string, seq: number): string {
  return seq === 1 ? messageId : `${messageId}.${seq}`;
}

/** Upper bound on groups in waiting per process: past it the oldest is given up. */
const MAX_GROUPS = 100_000;

export class PartsAssembler {
  readonly #groups = new Map<string, Group>();

  constructor(
    private readonly ctx: Context,
    private readonly timeoutMs: number,
    private readonly rejected: (items: PartsRejection[]) => void,
  ) {}

  add(systemId: string, _accountId: string, content: SubmitContent, addresses: Group['addresses']): PartAdded {
    const part = content.part!;
    const key = [systemId, content.from, content.to, part.ref, part.total].join('\u0000');
    let group = this.#groups.get(key);
    if (!group) {
      if (this.#groups.size >= MAX_GROUPS) this.#expire(this.#groups.keys().next().value!);
      group = {
        messageId: newId('msg', this.ctx.clock()),
        total: part.total,
        parts: new Map(),
        timer: setTimeout(() => this.#expire(key), this.timeoutMs),
        systemId,
        registeredDelivery: content.registeredDelivery,
        addresses,
      };
      group.timer.unref();
      this.#groups.set(key, group);
    }
    const partId = partIdOf(group.messageId, part.seq);
    // A part sent again (its answer was lost) is answered with the same id and counted once.
    if (!group.parts.has(part.seq)) group.parts.set(part.seq, { payload: content.payload, dataCoding: content.dataCoding });
    if (group.parts.size < group.total) return { kind: 'waiting', partId };
    clearTimeout(group.timer);
    this.#groups.delete(key);
    const ordered = [...group.parts.entries()].sort(([a], [b]) => a - b).map(([, p]) => p);
    const sameCoding = ordered.every((p) => p.dataCoding === ordered[0]!.dataCoding);
    const text = sameCoding
      ? decodeText(ordered[0]!.dataCoding, Buffer.concat(ordered.map((p) => p.payload)))
      : ordered.map((p) => decodeText(p.dataCoding, p.payload)).join('');
    const partIds = Array.from({ length: group.total }, (_, i) => partIdOf(group.messageId, i + 1));
    return { kind: 'complete', messageId: group.messageId, partId, partIds, text };
  }

  #expire(key: string): void {
    const group = this.#groups.get(key);
    if (!group) return;
    clearTimeout(group.timer);
    this.#groups.delete(key);
    const seqs = [...group.parts.keys()].sort((a, b) => a - b);
    const first = group.parts.get(seqs[0]!)!;
    this.ctx.log.info({ system_id: group.systemId, parts: seqs.length, total: group.total }, 'smpp: parts of a long message never completed; dropped');
    this.rejected([
      {
        systemId: group.systemId,
        partIds: seqs.map((s) => partIdOf(group.messageId, s)),
        text: decodeText(first.dataCoding, first.payload),
        registeredDelivery: group.registeredDelivery,
        ...group.addresses,
      },
    ]);
  }

  /** Groups waiting now. */
  get size(): number {
    return this.#groups.size;
  }

  close(): void {
    for (const g of this.#groups.values()) clearTimeout(g.timer);
    this.#groups.clear();
  }
}
