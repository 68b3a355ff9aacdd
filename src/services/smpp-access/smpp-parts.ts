/**
 * The parts of long messages submitted over SMPP (UDH or SAR), stored in the database as they
 * come (smpp-parts.repository.ts) until the last arrives: a part is answered only once stored, so
 * a restart or a SIGKILL loses none, and the parts of one message may reach different processes.
 * The message's id is chosen with its first stored part, so every part is answered at once with
 * its own id (the first part's id is the message's, the others add `.N`). The group is marked done
 * in the transaction that accepts its message (smpp-submit.ts) or refuses it, so a part sent again
 * afterwards is answered with its id and starts nothing. Groups that wait past the timeout are
 * given up by `sweep`: nothing charged, and their receipts say REJECTD.
 */
import type { Context } from '../context.ts';
import { enqueuePartsRejections, type PartsRejection } from './smpp-outbox.ts';
import { lockPartGroup } from '../../store/repositories/inbound-parts.repository.ts';
import {
  DONE_SEQ,
  deleteDoneSmppPartGroups,
  insertSmppPart,
  markSmppPartsDone,
  smppPartsOfGroup,
  staleSmppPartGroups,
  type SmppPartRow,
} from '../../store/repositories/smpp-parts.repository.ts';
import { messagesByIds } from '../../store/repositories/messages.repository.ts';
import { newId } from '../../util/ids.ts';
import { decodeText, type SubmitContent } from '../../smpp-server/submit-content.ts';

export interface PartAddresses {
  sourceAddr: string;
  sourceTon: number;
  destinationAddr: string;
}

/** A stored group of parts, as the acceptance marks it done. */
export type PartsGroup = SmppPartRow;

export type PartAdded =
  /** Stored; the rest have yet to come. */
  | { kind: 'waiting'; partId: string }
  /** Its message was accepted or refused already: a part sent again. */
  | { kind: 'repeat'; partId: string }
  /** A part that was not there when its group was given up or its message refused. */
  | { kind: 'late' }
  | { kind: 'complete'; messageId: string; partId: string; partIds: string[]; text: string; group: SmppPartRow; parts: PartReceipts[] };

/** What each part asked for: clients differ (Kannel asks for a receipt on its last part only). */
export interface PartReceipts {
  id: string;
  registeredDelivery: number;
}

export function partIdOf(messageId: string, seq: number): string {
  return seq === 1 ? messageId : `${messageId}.${seq}`;
}

/** Groups given up per sweep, at most. */
const SWEEP_BATCH = 500;

export class PartsAssembler {
  constructor(
    private readonly ctx: Context,
    private readonly timeoutMs: number,
    /** Called with the users whose REJECTD receipts were queued. */
    private readonly rejected: (systemIds: string[]) => void,
  ) {}

  async add(systemId: string, content: SubmitContent, addresses: PartAddresses): Promise<PartAdded> {
    const part = content.part!;
    const groupKey = JSON.stringify([systemId, content.from, content.to, part.ref, part.total]);
    // The wait for the rest is a timer, measured in the machine's time (`received_at` and the sweep).
    const now = Date.now();
    return this.ctx.store.db.transaction().execute(async (trx) => {
      await lockPartGroup(trx, groupKey);
      const rows = await smppPartsOfGroup(trx, groupKey);
      const messageId = rows[0]?.message_id ?? newId('msg', this.ctx.clock());
      const partId = partIdOf(messageId, part.seq);
      if (rows[0]?.seq === DONE_SEQ) return rows.some((r) => r.seq === part.seq) ? { kind: 'repeat', partId } : { kind: 'late' };
      const row: SmppPartRow = {
        group_key: groupKey,
        seq: part.seq,
        total: part.total,
        message_id: messageId,
        system_id: systemId,
        payload: content.payload.toString('base64'),
        data_coding: content.dataCoding,
        registered_delivery: content.registeredDelivery,
        source_addr: addresses.sourceAddr,
        source_ton: addresses.sourceTon,
        destination_addr: addresses.destinationAddr,
        received_at: now,
      };
      // A part sent again (its answer was lost) is answered with the same id and counted once.
      const parts = rows.some((r) => r.seq === part.seq) ? rows : [...rows, row].sort((a, b) => a.seq - b.seq);
      if (parts.length === rows.length + 1) await insertSmppPart(trx, row);
      if (parts.length < part.total) return { kind: 'waiting', partId };
      const sameCoding = parts.every((p) => p.data_coding === parts[0]!.data_coding);
      const bytes = (p: SmppPartRow) => Buffer.from(p.payload, 'base64');
      const text = sameCoding ? decodeText(parts[0]!.data_coding, Buffer.concat(parts.map(bytes))) : parts.map((p) => decodeText(p.data_coding, bytes(p))).join('');
      const partIds = Array.from({ length: part.total }, (_, i) => partIdOf(messageId, i + 1));
      const asked = parts.map((p) => ({ id: partIdOf(messageId, p.seq), registeredDelivery: p.registered_delivery }));
      return { kind: 'complete', messageId, partId, partIds, text, group: parts[0]!, parts: asked };
    });
  }

  /** The group's message was refused: its earlier parts get REJECTD receipts (those that asked), and it is done. */
  async refuse(group: SmppPartRow, parts: PartReceipts[]): Promise<void> {
    const now = Date.now();
    const queued = await this.ctx.store.db.transaction().execute(async (trx) => {
      await lockPartGroup(trx, group.group_key);
      const rows = await smppPartsOfGroup(trx, group.group_key);
      if (rows[0]?.seq === DONE_SEQ) return false;
      await markSmppPartsDone(trx, group, now);
      await enqueuePartsRejections(this.ctx, rejectionsOf(group, parts), trx);
      return true;
    });
    if (queued) this.rejected([group.system_id]);
  }

  /**
   * Gives up the groups whose first part came longer than the timeout ago and whose other parts
   * never came: nothing was charged, their parts get REJECTD receipts. A group whose parts are all
   * stored is being accepted (its last part's transaction marks it done), or was left by a process
   * that died before: after twice the timeout, its message is looked for, and the group is only
   * marked done if it was stored, else given up. Done groups are removed once a part sent again
   * can no longer be expected (ten timeouts). Returns how many groups it settled.
   */
  async sweep(): Promise<number> {
    const now = Date.now();
    const stale = await staleSmppPartGroups(this.ctx.store.db, now - this.timeoutMs, SWEEP_BATCH);
    const users = new Set<string>();
    let settled = 0;
    for (const key of stale) {
      const given = await this.ctx.store.db.transaction().execute(async (trx) => {
        await lockPartGroup(trx, key);
        const rows = await smppPartsOfGroup(trx, key);
        const first = rows[0];
        if (!first || first.seq === DONE_SEQ) return null;
        if (rows.length === first.total) {
          if (Math.max(...rows.map((r) => r.received_at)) > now - 2 * this.timeoutMs) return null;
          if ((await messagesByIds(trx, [first.message_id])).length > 0) {
            await markSmppPartsDone(trx, first, now);
            return 'stored';
          }
        }
        await markSmppPartsDone(trx, first, now);
        await enqueuePartsRejections(this.ctx, rejectionsOf(first, rows.map((r) => ({ id: partIdOf(r.message_id, r.seq), registeredDelivery: r.registered_delivery }))), trx);
        return rows;
      });
      if (!given) continue;
      settled++;
      if (given === 'stored') continue;
      users.add(given[0]!.system_id);
      this.ctx.log.info({ system_id: given[0]!.system_id, parts: given.length, total: given[0]!.total }, 'smpp: parts of a long message never completed; dropped');
    }
    await deleteDoneSmppPartGroups(this.ctx.store.db, now - 10 * this.timeoutMs);
    if (users.size > 0) this.rejected([...users]);
    return settled;
  }
}

/** REJECTD receipts for `parts`, each as it asked; the text is the first part's. */
function rejectionsOf(first: SmppPartRow, parts: PartReceipts[]): PartsRejection[] {
  const text = first.payload === '' ? '' : decodeText(first.data_coding, Buffer.from(first.payload, 'base64'));
  return parts.map((p) => ({
    systemId: first.system_id,
    partIds: [p.id],
    text,
    registeredDelivery: p.registeredDelivery,
    sourceAddr: first.source_addr,
    sourceTon: first.source_ton,
    destinationAddr: first.destination_addr,
  }));
}
