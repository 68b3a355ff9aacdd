import type { Executor } from '../connect.ts';

export interface OnboardingFacts {
  credits: number;
  toppedUp: boolean;
  senderIds: { approved: boolean; pending: boolean };
  hasKey: boolean;
  hasMessage: boolean;
  webhookDelivered: boolean;
}

/**
 * What a new account has done so far, for the overview's checklist. Each question is an
 * "any row?" lookup that stops at the first row (every table is indexed by account).
 */
export async function onboardingFacts(db: Executor, accountId: string): Promise<OnboardingFacts> {
  const [account, topup, approved, pending, key, message, webhook] = await Promise.all([
    db.selectFrom('accounts').select('credits').where('id', '=', accountId).executeTakeFirst(),
    db.selectFrom('credit_ledger').select('id').where('account_id', '=', accountId).where('kind', '=', 'topup').limit(1).executeTakeFirst(),
    db.selectFrom('sender_ids').select('id').where('account_id', '=', accountId).where('status', '=', 'approved').limit(1).executeTakeFirst(),
    db.selectFrom('sender_ids').select('id').where('account_id', '=', accountId).where('status', '=', 'pending').limit(1).executeTakeFirst(),
    db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).limit(1).executeTakeFirst(),
    db.selectFrom('messages').select('id').where('account_id', '=', accountId).limit(1).executeTakeFirst(),
    db.selectFrom('webhook_events').select('id').where('account_id', '=', accountId).where('status', '=', 'delivered').limit(1).executeTakeFirst(),
  ]);
  const credits = Number(account?.credits ?? 0);
  return {
    credits,
    toppedUp: topup !== undefined || credits > 0,
    senderIds: { approved: approved !== undefined, pending: pending !== undefined },
    hasKey: key !== undefined,
    hasMessage: message !== undefined,
    webhookDelivered: webhook !== undefined,
  };
}
