import { iso } from '../../util/ids.ts';
import { twilioCredentials } from '../../services/twilio/credentials.ts';
import { setEventsUrl } from '../../services/accounts/events-url.ts';
import { createAccount, getAccount, listAccounts, setAccountStatus, addCredits, rotateWebhookSecret, type Account } from '../../services/accounts/accounts.ts';
import { setAccountLimits, type AccountLimitsView, type LimitsChange } from '../../services/accounts/account-limits.ts';
import { arg, required, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

function wholeNumberFlag(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) throw new UsageError(`${flag} must be a whole number, 0 or more.`);
  return Number(value);
}

function describeLimits(v: AccountLimitsView): string {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const installation = v.installation_countries === null ? 'every country' : v.installation_countries.map((c) => `+${c}`).join(', ');
  return [
    `Account ${v.id} (made by ${v.origin === 'signup' ? 'dashboard sign-up' : 'the operator'})`,
    `pending Sender IDs: ${v.usage.pending_sender_ids} of ${v.limits.pending_sender_ids}${v.overridden.pending_sender_ids ? '' : ' (installation default)'}`,
    `documents: ${mib(v.usage.document_bytes)} of ${mib(v.limits.document_bytes)} (${v.limits.document_bytes} bytes)${v.overridden.document_bytes ? '' : ' (installation default)'}`,
    `messages per UTC day: ${v.limits.daily_messages === null ? 'no cap' : `${v.usage.messages_today} sent today of ${v.limits.daily_messages}`}`,
    `countries: ${v.limits.countries === null ? `all the installation allows (${installation})` : `${v.limits.countries.map((c) => `+${c}`).join(', ')} (within ${installation})`}`,
  ].join('\n');
}

function summary(a: Account) {
  return { id: a.id, name: a.name, email: a.email, status: a.status, credits_remaining: Number(a.credits) };
}

export const accountCommands: Record<string, Command> = {
  'account create': {
    usage: 'account create --name N --email E [--credits C]',
    description: 'Create a customer account (active). An e-mail address belongs to one account only.',
    options: { name: 'string', email: 'string', credits: 'string' },
    optionHelp: { name: "the customer's name", email: 'the contact address (unique across accounts)', credits: 'credits to start with (default 0)' },
    async run(ctx, { values }, out) {
      if (values.credits !== undefined && !/^\d+$/.test(values.credits as string)) throw new UsageError('--credits must be a whole number, 0 or more.');
      const credits = values.credits === undefined ? 0 : Number(values.credits);
      const account = await createAccount(ctx, { name: required(values.name, '--name'), email: required(values.email, '--email'), credits });
      out.print(summary(account), `Created account ${account.id} (${account.name}) with ${credits} credits.`);
    },
  },
  'account show': {
    usage: 'account show ID',
    description: 'Show an account, with its credits and its webhook signing secret.',
    async run(ctx, { positionals }, out) {
      const a = await getAccount(ctx, arg(positionals, 0, 'ID'));
      const result = { id: a.id, name: a.name, email: a.email, status: a.status, credits_remaining: Number(a.credits), webhook_secret: a.webhook_secret };
      out.print(result, Object.entries(result).map(([k, v]) => `${k}: ${v}`).join('\n'));
    },
  },
  'account list': {
    usage: 'account list [--email E]',
    description: 'List accounts, newest first.',
    options: { email: 'string' },
    optionHelp: { email: 'only the account with this e-mail address (any case)' },
    async run(ctx, { values }, out) {
      const rows = (await listAccounts(ctx, { email: values.email as string | undefined })).map(summary);
      out.print({ data: rows }, table(rows, ['id', 'name', 'email', 'status', 'credits_remaining'], 'accounts'));
    },
  },
  'account suspend': {
    usage: 'account suspend ID',
    description: 'Suspend an account: every request with its keys gets 403 account_suspended until it is resumed.',
    async run(ctx, { positionals }, out) {
      const a = await setAccountStatus(ctx, arg(positionals, 0, 'ID'), 'suspended');
      out.print(summary(a), `Account ${a.id} is suspended.`);
    },
  },
  'account resume': {
    usage: 'account resume ID',
    description: 'Make a suspended account active again.',
    async run(ctx, { positionals }, out) {
      const a = await setAccountStatus(ctx, arg(positionals, 0, 'ID'), 'active');
      out.print(summary(a), `Account ${a.id} is active.`);
    },
  },
  'account events-url': {
    usage: 'account events-url ID URL|--clear',
    description: 'Set (or clear) where the account’s own events go: sms.received, recipient.opted_out, recipient.opted_in. HTTPS only; signed and retried like delivery events.',
    options: { clear: 'boolean' },
    optionHelp: { clear: 'send these events nowhere' },
    async run(ctx, { positionals, values }, out) {
      const id = arg(positionals, 0, 'ID');
      const url = positionals[1];
      if (values.clear === true && url !== undefined) throw new UsageError('Give either a URL or --clear, not both.');
      if (values.clear !== true && url === undefined) throw new UsageError('URL or --clear is required.');
      const set = await setEventsUrl(ctx, id, values.clear === true ? null : url!);
      out.print({ id, events_url: set }, set === null ? `Account ${id} has no events URL.` : `Account ${id} sends its events to ${set}.`);
    },
  },
  'account limits': {
    usage: 'account limits ID [--pending-sender-ids N] [--document-bytes N] [--daily N|--no-daily] [--countries 44,33|--all-countries]',
    options: { 'pending-sender-ids': 'string', 'document-bytes': 'string', daily: 'string', 'no-daily': 'boolean', countries: 'string', 'all-countries': 'boolean' },
    async run(ctx, { positionals, values }, out) {
      const id = arg(positionals, 0, 'ID');
      if (values.daily !== undefined && values['no-daily']) throw new UsageError('Give --daily N or --no-daily, not both.');
      if (values.countries !== undefined && values['all-countries']) throw new UsageError('Give --countries or --all-countries, not both.');
      const change: LimitsChange = {};
      const pending = wholeNumberFlag(values['pending-sender-ids'], '--pending-sender-ids');
      if (pending !== undefined) change.pendingSenderIds = pending;
      const bytes = wholeNumberFlag(values['document-bytes'], '--document-bytes');
      if (bytes !== undefined) change.documentBytes = bytes;
      const daily = wholeNumberFlag(values.daily, '--daily');
      if (daily !== undefined) change.dailyMessages = daily;
      if (values['no-daily']) change.dailyMessages = null;
      if (values.countries !== undefined) change.countries = required(values.countries, '--countries');
      if (values['all-countries']) change.countries = null;
      // Without flags nothing changes: the command shows the limits.
      const view = await setAccountLimits(ctx, id, change);
      out.print({ id: view.id, limits: view.limits }, describeLimits(view));
    },
  },
  'account rotate-webhook-secret': {
    usage: 'account rotate-webhook-secret ID',
    description: 'Replace the webhook signing secret; the previous one keeps signing beside it for 24 hours.',
    async run(ctx, { positionals }, out) {
      const a = await rotateWebhookSecret(ctx, arg(positionals, 0, 'ID'));
      out.print(
        { id: a.id, webhook_secret: a.webhook_secret },
        `New webhook secret for ${a.id}: ${a.webhook_secret}\nThe previous secret keeps signing beside it for 24 hours.`,
      );
    },
  },
  'account twilio-credentials': {
    usage: 'account twilio-credentials ACCOUNT_ID [--rotate]',
    description:
      'The Account SID and Auth Token of the Twilio-compatible API (made on first use). The token is printed in full only when made or rotated, masked otherwise; after --rotate the previous one keeps working for 24 hours.',
    options: { rotate: 'boolean' },
    optionHelp: { rotate: 'replace the Auth Token' },
    async run(ctx, { positionals, values }, out) {
      const c = await twilioCredentials(ctx, arg(positionals, 0, 'ACCOUNT_ID'), { rotate: values.rotate === true });
      const lines = [`Account SID: ${c.account_sid}`, `Auth Token:  ${c.auth_token}`];
      if (c.revealed) lines.push('Keep the token now: it is not shown in full again.');
      if (c.previous_valid_until !== null) lines.push(`The previous token keeps working until ${iso(c.previous_valid_until)}.`);
      out.print({ account_sid: c.account_sid, auth_token: c.auth_token }, lines.join('\n'));
    },
  },
  'credits add': {
    usage: 'credits add ACCOUNT_ID AMOUNT [--note TEXT]',
    description: 'Add credits to an account (a ledger row); prints the new balance.',
    options: { note: 'string' },
    optionHelp: { note: 'a note kept with the ledger row, e.g. an invoice number' },
    async run(ctx, { positionals, values }, out) {
      const accountId = arg(positionals, 0, 'ACCOUNT_ID');
      const raw = arg(positionals, 1, 'AMOUNT');
      if (!/^\d+$/.test(raw)) throw new UsageError('AMOUNT must be a whole number above 0.');
      const balance = await addCredits(ctx, accountId, Number(raw), (values.note as string | undefined) ?? null);
      out.print({ account_id: accountId, added: Number(raw), credits_remaining: balance }, `Added ${raw} credits to ${accountId}; balance ${balance}.`);
    },
  },
};
