import { approveSenderId, listSenderIds, rejectSenderId, requestSenderIdInfo, type SenderId, type SenderIdStatus } from '../../services/sender-ids/sender-ids.ts';
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
    description: 'List Sender IDs, newest first.',
    options: { status: 'string', account: 'string' },
    optionHelp: { status: 'pending, approved or rejected', account: 'only this account' },
    async run(ctx, { values }, out) {
      const status = values.status as string | undefined;
      if (status !== undefined && !STATUSES.includes(status)) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}.`);
      const rows = (await listSenderIds(ctx, { status: status as SenderIdStatus | undefined, accountId: values.account as string | undefined })).map(record);
      out.print({ data: rows }, table(rows, ['id', 'account_id', 'name', 'status', 'created_at'], 'Sender IDs'));
    },
  },
  'sender-id approve': {
    usage: 'sender-id approve ID',
    description: 'Approve a Sender ID: the account may send from it at once, and its owner gets an e-mail.',
    async run(ctx, { positionals }, out) {
      const s = await approveSenderId(ctx, arg(positionals, 0, 'ID'));
      out.print(
        record(s),
        s.alreadyApproved
          ? `Sender ID ${s.name} (${s.id}) was already approved; nothing changed and no e-mail was sent.`
          : `Sender ID ${s.name} (${s.id}) is approved.`,
      );
    },
  },
  'sender-id reject': {
    usage: 'sender-id reject ID --reason R',
    description: 'Reject a Sender ID with a reason, which its owner receives by e-mail.',
    options: { reason: 'string' },
    optionHelp: { reason: 'why, in words the owner will read' },
    async run(ctx, { positionals, values }, out) {
      const s = await rejectSenderId(ctx, arg(positionals, 0, 'ID'), required(values.reason, '--reason'));
      out.print(record(s), `Sender ID ${s.name} (${s.id}) is rejected.`);
    },
  },
  'sender-id request-info': {
    usage: 'sender-id request-info ID --note N',
    description: 'Ask the owner for more information; the Sender ID stays pending with the note.',
    options: { note: 'string' },
    optionHelp: { note: 'what the owner should send, e.g. a trademark certificate' },
    async run(ctx, { positionals, values }, out) {
      const s = await requestSenderIdInfo(ctx, arg(positionals, 0, 'ID'), required(values.note, '--note'));
      out.print(record(s), `Asked the owner of ${s.name} (${s.id}) for more information.`);
    },
  },
};
