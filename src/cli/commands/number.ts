import { assignNumber, listNumbers, releaseNumber, type AssignedNumber } from '../../services/numbers/numbers.ts';
import { iso } from '../../util/ids.ts';
import { arg, type Command } from '../command.ts';
import { table } from '../output.ts';

function record(n: AssignedNumber) {
  return { number: n.number, account_id: n.account_id, label: n.label, sms_url: n.sms_url ?? null, created_at: iso(Number(n.created_at)) };
}

export const numberCommands: Record<string, Command> = {
  'number assign': {
    usage: 'number assign ACCOUNT_ID NUMBER [--label L] [--sms-url URL]',
    description:
      'Assign a phone number (E.164, or a short code of 3 to 8 digits) to an account: it may send from it and receives what is sent to it, in every process at once.',
    options: { label: 'string', 'sms-url': 'string' },
    optionHelp: { label: 'a name for people, e.g. "Support line"', 'sms-url': 'https:// URL that receives messages to the number Twilio-style (TwiML replies)' },
    async run(ctx, { positionals, values }, out) {
      const n = await assignNumber(ctx, arg(positionals, 0, 'ACCOUNT_ID'), arg(positionals, 1, 'NUMBER'), values.label as string | undefined, values['sms-url'] as string | undefined);
      out.print(record(n), `${n.number} is assigned to ${n.account_id}.`);
    },
  },
  'number release': {
    usage: 'number release NUMBER',
    description: 'Release a number from its account: sends from it are refused and what comes to it is kept as unrouted, at once.',
    async run(ctx, { positionals }, out) {
      const n = await releaseNumber(ctx, arg(positionals, 0, 'NUMBER'));
      out.print(record(n), `${n.number} is released from ${n.account_id}.`);
    },
  },
  'number list': {
    usage: 'number list [--account ID]',
    description: 'List assigned numbers, newest first.',
    options: { account: 'string' },
    optionHelp: { account: 'only this account' },
    async run(ctx, { values }, out) {
      const rows = (await listNumbers(ctx, { accountId: values.account as string | undefined })).map(record);
      out.print({ data: rows }, table(rows, ['number', 'account_id', 'label', 'created_at'], 'Numbers'));
    },
  },
};
