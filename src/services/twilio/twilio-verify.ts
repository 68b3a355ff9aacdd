/**
 * Twilio's Verify v2 on Pigeon's Verify (DECISIONS.md §14): the same services, verifications and
 * checks as `/v1/verify`, through the same functions (src/services/verify/verify.ts); only the
 * parameters, the resources' shapes and the error codes are Twilio's. A service is `VA` and a
 * verification `VE` followed by the 32 hex digits of the record's Pigeon id
 * (src/domain/twilio-sid.ts), so either surface reads what the other made.
 */
import { parseRecipient } from '../../domain/phone-number.ts';
import { rangeOf } from '../../domain/verify.ts';
import { serviceIdOfSid, serviceSidOf, verificationIdOfSid, verificationSidOf } from '../../domain/twilio-sid.ts';
import { AppError } from '../../errors/catalogue.ts';
import { TwilioError } from '../../errors/twilio-catalogue.ts';
import type { VerificationStatus, VerificationsTable, VerifyServicesTable } from '../../store/database.ts';
import { listNumberRows } from '../../store/repositories/numbers.repository.ts';
import { listSenderIdRows } from '../../store/repositories/sender-ids.repository.ts';
import * as repo from '../../store/repositories/verify.repository.ts';
import { iso } from '../../util/ids.ts';
import * as verify from '../verify/verify.ts';
import type { Context } from '../context.ts';
import type { TwilioCaller } from './credentials.ts';
import { single, type TwilioParams } from './twilio-messages.ts';

const VERIFY_BASE = '/v2/Services';

/** Parameters of Twilio's that Pigeon does not honour; refused rather than ignored. */
const UNSUPPORTED_ON_CREATE = ['CustomCode', 'CustomMessage', 'Amount', 'Payee', 'TemplateSid', 'TemplateCustomSubstitutions', 'ChannelConfiguration', 'RateLimits'];

function required(params: TwilioParams, name: string): string {
  const value = single(params, name);
  if (value === undefined || value === '') throw new TwilioError(60200, `'${name}' is required.`);
  return value;
}

function serviceNotFound(): AppError {
  return new AppError('not_found', 'No Verify service with this SID.');
}

async function serviceOf(ctx: Context, caller: TwilioCaller, sid: string): Promise<VerifyServicesTable> {
  const id = serviceIdOfSid(sid);
  if (id === null) throw serviceNotFound();
  return verify.getService(ctx, caller.accountId, id);
}

/** The Service resource. */
function serviceResource(ctx: Context, caller: TwilioCaller, s: VerifyServicesTable) {
  const sid = serviceSidOf(s.id);
  const url = `${ctx.config.publicUrl}${VERIFY_BASE}/${sid}`;
  const created = twilioDate(Number(s.created_at));
  return {
    sid,
    account_sid: caller.accountSid,
    friendly_name: s.name,
    code_length: Number(s.code_length),
    lookup_enabled: false,
    psd2_enabled: false,
    skip_sms_to_landlines: false,
    dtmf_input_required: false,
    tts_name: null,
    do_not_share_warning_enabled: false,
    custom_code_enabled: false,
    push: {},
    totp: {},
    default_template_sid: null,
    verify_event_subscription_enabled: false,
    date_created: created,
    date_updated: created,
    url,
    links: { verifications: `${url}/Verifications`, verification_checks: `${url}/VerificationCheck` },
  };
}

function twilioDate(ms: number): string {
  return iso(ms).replace(/\.\d{3}Z$/, 'Z');
}

/** The Verification resource. */
function verificationResource(ctx: Context, caller: TwilioCaller, v: VerificationsTable) {
  const sid = verificationSidOf(v.id);
  const serviceSid = serviceSidOf(v.service_id);
  return {
    sid,
    service_sid: serviceSid,
    account_sid: caller.accountSid,
    to: v.recipient,
    channel: 'sms',
    status: v.status,
    valid: v.status === 'approved',
    lookup: {},
    amount: null,
    payee: null,
    send_code_attempts: v.last_sent_at === null ? [] : [{ attempt_sid: v.message_id, channel: 'sms', time: twilioDate(Number(v.last_sent_at)) }],
    date_created: twilioDate(Number(v.created_at)),
    date_updated: twilioDate(Number(v.updated_at)),
    sna: null,
    url: `${ctx.config.publicUrl}${VERIFY_BASE}/${serviceSid}/Verifications/${sid}`,
  };
}

async function verificationRow(ctx: Context, caller: TwilioCaller, id: string): Promise<VerificationsTable> {
  const row = await repo.verificationById(ctx.store.db, caller.accountId, id);
  if (!row) throw new AppError('not_found', 'No verification with this SID.');
  return row;
}

/**
 * The sender of a service made here: Twilio's services have none, so it is the `FriendlyName`
 * when that is an approved Sender ID or a number of the account, else the account's newest
 * approved Sender ID, else its newest number; with none of them, 21606.
 */
async function senderFor(ctx: Context, caller: TwilioCaller, name: string): Promise<string> {
  const ids = await listSenderIdRows(ctx.store.db, { accountId: caller.accountId, status: 'approved' });
  const named = ids.find((s) => s.name_key === name.toUpperCase());
  if (named) return named.name;
  if (ids[0]) return ids[0].name;
  const numbers = await listNumberRows(ctx.store.db, { accountId: caller.accountId });
  if (numbers[0]) return numbers[0].number;
  throw new AppError('invalid_sender_id', 'The account has no approved Sender ID or number to send codes from.');
}

/** `POST /v2/Services` with `FriendlyName` and optional `CodeLength`. */
export async function createTwilioService(ctx: Context, caller: TwilioCaller, params: TwilioParams) {
  const name = required(params, 'FriendlyName');
  const length = single(params, 'CodeLength');
  if (length !== undefined && !/^\d{1,2}$/.test(length)) throw new TwilioError(60200, "'CodeLength' must be 4 to 10.");
  const from = await senderFor(ctx, caller, name);
  const view = await verify.createService(ctx, caller.accountId, caller.sender.access, { name, from, ...(length !== undefined ? { code_length: Number(length) } : {}) });
  return serviceResource(ctx, caller, await verify.getService(ctx, caller.accountId, view.id));
}

/** `GET /v2/Services/{VA…}`. */
export async function fetchTwilioService(ctx: Context, caller: TwilioCaller, sid: string) {
  return serviceResource(ctx, caller, await serviceOf(ctx, caller, sid));
}

/** `POST /v2/Services/{VA…}/Verifications` with `To` and `Channel=sms`: a new code, or the same code again. */
export async function createTwilioVerification(ctx: Context, caller: TwilioCaller, serviceSid: string, params: TwilioParams) {
  const service = await serviceOf(ctx, caller, serviceSid);
  const to = required(params, 'To');
  const channel = required(params, 'Channel');
  if (channel !== 'sms') throw new TwilioError(60200, `Channel '${channel}' is not supported: Pigeon sends codes by SMS only.`);
  for (const name of UNSUPPORTED_ON_CREATE) if (params[name] !== undefined) throw new TwilioError(60200, `'${name}' is not supported.`);
  const { verification } = await verify.createVerification(ctx, caller.sender, service.id, to);
  return verificationResource(ctx, caller, await verificationRow(ctx, caller, verification.id));
}

async function verificationIn(ctx: Context, caller: TwilioCaller, serviceSid: string, sid: string): Promise<VerificationsTable> {
  const service = await serviceOf(ctx, caller, serviceSid);
  const id = verificationIdOfSid(sid);
  const row = id === null ? undefined : await repo.verificationById(ctx.store.db, caller.accountId, id);
  if (!row || row.service_id !== service.id) throw new AppError('not_found', 'No verification with this SID.');
  return row;
}

/** `GET /v2/Services/{VA…}/Verifications/{VE…}`. */
export async function fetchTwilioVerification(ctx: Context, caller: TwilioCaller, serviceSid: string, sid: string) {
  const row = await verificationIn(ctx, caller, serviceSid, sid);
  await verify.getVerification(ctx, caller.accountId, row.id); // settles a lapsed expiry
  return verificationResource(ctx, caller, await verificationRow(ctx, caller, row.id));
}

/** `POST /v2/Services/{VA…}/Verifications/{VE…}` with `Status=canceled` or `Status=approved`. */
export async function updateTwilioVerification(ctx: Context, caller: TwilioCaller, serviceSid: string, sid: string, params: TwilioParams) {
  const row = await verificationIn(ctx, caller, serviceSid, sid);
  const status = required(params, 'Status');
  if (status === 'canceled') await verify.cancelVerification(ctx, caller.accountId, row.id);
  else if (status === 'approved') await verify.approveVerification(ctx, caller.accountId, row.id);
  else throw new TwilioError(60200, "'Status' must be canceled or approved.");
  return verificationResource(ctx, caller, await verificationRow(ctx, caller, row.id));
}

/**
 * `POST /v2/Services/{VA…}/VerificationCheck` with `Code` and `To` or `VerificationSid`:
 * `status` `approved` or `pending` and `valid`. A verification whose checks are spent answers
 * 60202 to further checks, as Twilio's does; no pending verification at all is 20404.
 */
export async function checkTwilioVerification(ctx: Context, caller: TwilioCaller, serviceSid: string, params: TwilioParams) {
  const service = await serviceOf(ctx, caller, serviceSid);
  const code = required(params, 'Code');
  const to = single(params, 'To');
  const verificationSid = single(params, 'VerificationSid');
  let target: { to: string } | { verification_id: string };
  if (verificationSid !== undefined && verificationSid !== '') {
    const id = verificationIdOfSid(verificationSid);
    if (id === null) throw new AppError('not_found', 'No verification with this SID.');
    target = { verification_id: id };
  } else if (to !== undefined && to !== '') {
    target = { to };
  } else {
    throw new TwilioError(60200, "'To' or 'VerificationSid' is required.");
  }
  if (code.length > 10) throw new TwilioError(60200, "'Code' is at most 10 characters.");
  let result: verify.CheckResult;
  try {
    result = await verify.checkCode(ctx, caller.accountId, service.id, target, code);
  } catch (error) {
    if (error instanceof AppError && error.code === 'not_found') {
      const last = await lastTried(ctx, caller, service, target);
      if (last?.status === 'max_attempts_reached') throw new TwilioError(60202);
    }
    throw error;
  }
  const row = await verificationRow(ctx, caller, result.id);
  // Twilio's check answers pending for a wrong code, even the last one; the next check is 60202.
  const status: VerificationStatus = result.status === 'approved' ? 'approved' : 'pending';
  const resource = verificationResource(ctx, caller, row);
  return {
    sid: resource.sid,
    service_sid: resource.service_sid,
    account_sid: resource.account_sid,
    to: resource.to,
    channel: 'sms',
    status,
    valid: result.valid,
    amount: null,
    payee: null,
    sna_attempts_error_codes: [],
    date_created: resource.date_created,
    date_updated: resource.date_updated,
  };
}

async function lastTried(ctx: Context, caller: TwilioCaller, service: VerifyServicesTable, target: { to: string } | { verification_id: string }) {
  if ('verification_id' in target) {
    const row = await repo.verificationById(ctx.store.db, caller.accountId, target.verification_id);
    return row?.service_id === service.id ? row : undefined;
  }
  const recipient = parseRecipient(target.to);
  return recipient.ok ? repo.latestVerification(ctx.store.db, service.account_id, rangeOf(recipient.e164), service.id, recipient.e164) : undefined;
}
