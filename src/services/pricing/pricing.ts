/**
 * What a message costs (DECISIONS.md §11): the price of its destination on the account's rate
 * card at acceptance, times its segments. Every acceptance (the API's sends and bulk, campaigns,
 * SMPP) and the quotes and the price lookup ask `priceRule`, so there is one set of rules.
 */
import type { Price, PriceMatch, NextChange } from '../../domain/rate-card.ts';
import { AppError, type ErrorCode } from '../../errors/catalogue.ts';
import { parseRecipient } from '../../domain/phone-number.ts';
import type { Context } from '../context.ts';
import { rateCardOf, rateTable } from './price-cache.ts';

export type PriceCheck = { ok: true; creditsPerSegment: number } | { ok: false; code: ErrorCode; message: string };

/** Prices a normalised E.164 number; the same answer for every entry point. */
export type PriceRule = (e164: string) => PriceCheck;

export function refusalOf(e164: string, match: PriceMatch | null): PriceCheck {
  if (match === null) return { ok: false, code: 'destination_not_priced', message: `Messages to ${e164} have no price on this account's rate card.` };
  if (match.price === 'blocked') return { ok: false, code: 'destination_not_allowed', message: `Messages to ${match.prefix} numbers are blocked on this account's rate card.` };
  return { ok: true, creditsPerSegment: match.price };
}

/** The account's prices as of `at` (acceptance: now). */
export async function priceRule(ctx: Context, accountId: string, at: number = ctx.clock()): Promise<PriceRule> {
  const table = await rateTable(ctx.store, await rateCardOf(ctx.store, accountId));
  return (e164) => refusalOf(e164, table.lookup(e164, at));
}

export interface DestinationPrice {
  to: string;
  prefix: string;
  credits_per_segment: number;
  effective_from: string;
  next_change: { credits_per_segment: Price | null; effective_from: string } | null;
}

function nextChangeView(next: NextChange | null): DestinationPrice['next_change'] {
  return next === null ? null : { credits_per_segment: next.price, effective_from: new Date(next.effectiveFrom).toISOString() };
}

/** `GET /v1/pricing?to=...`: refused as a send to `to` would be. */
export async function destinationPrice(ctx: Context, accountId: string, to: string): Promise<DestinationPrice> {
  const recipient = to.length > 32 ? ({ ok: false, reason: 'too long' } as const) : parseRecipient(to);
  if (!recipient.ok) throw new AppError('invalid_recipient', `\`to\` is not a valid E.164 number: ${recipient.reason}`);
  const now = ctx.clock();
  const table = await rateTable(ctx.store, await rateCardOf(ctx.store, accountId));
  const match = table.lookup(recipient.e164, now);
  const check = refusalOf(recipient.e164, match);
  if (!check.ok) throw new AppError(check.code, check.message);
  return {
    to: recipient.e164,
    prefix: match!.prefix,
    credits_per_segment: check.creditsPerSegment,
    effective_from: new Date(match!.effectiveFrom).toISOString(),
    next_change: nextChangeView(table.nextChange(recipient.e164, now)),
  };
}
