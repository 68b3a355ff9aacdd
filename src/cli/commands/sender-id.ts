import { approveSenderId, listSenderIds, rejectSenderId, requestSenderIdInfo, type SenderId, type SenderIdStatus } from '../../services/sender-ids.ts';
import { iso } from '../../util/ids.ts';
import { arg, required, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

function record(s: SenderId) {
  return { id: s.id, account_id: s.account_id, name: s.name, status: s.status, review_note: s.review_note, created_at: iso(Number(s.created_at)) };
}

const STATUSES = ['pending', 'approved', 'rejected'];

export const senderIdCommands: Record<string, Command> = {
  'sender-id list': {
    usage: 'sender-id list [--status S] [--account ID]',
    options: { status: 'string', account: 'string' },
    async run(ctx, { values }, out) {
      const status = values.status as string | undefined;
      if (status !== undefined && !STATUSES.includes(status)) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}.`);
      const rows = (await listSenderIds(ctx, { status: status as SenderIdStatus | undefined, accountId: values.account as string | undefined })).map(record);
      out.print({ data: rows }, table(rows, ['id', 'account_id', 'name', 'status', 'created_at']));
    },
  },
  'sender-id approve': {
    usage: 'sender-id approve ID',
    async run(ctx, { positionals }, out) {
      const s = await approveSenderId(ctx, arg(positionals, 0, 'ID'));
      out.print(record(s), `Sender ID ${s.name} (${s.id}) is approved.`);
    },
  },
  'sender-id reject': {
    usage: 'sender-id reject ID --reason R',
    options: { reason: 'string' },
    async run(ctx, { positionals, values }, out) {
      const s = await rejectSenderId(ctx, arg(positionals, 0, 'ID'), required(values.reason, '--reason'));
      out.print(record(s), `Sender ID ${s.name} (${s.id}) is rejected.`);
    },
  },
  'sender-id request-info': {
    usage: 'sender-id request-info ID --note N',
    options: { note: 'string' },
    async run(ctx, { positionals, values }, out) {
      const s = await requestSenderIdInfo(ctx, arg(positionals, 0, 'ID'), required(values.note, '--note'));
      out.print(record(s), `Asked the owner of ${s.name} (${s.id}) for more information.`);
    },
  },
};
