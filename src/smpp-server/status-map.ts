/** The command_status a refused submit answers (DECISIONS.md §10's table), from the acceptance's error code. */
import { AppError } from '../errors/catalogue.ts';
import { STATUS } from './pdu.ts';

const BY_CODE: Record<string, number> = {
  invalid_sender_id: STATUS.RINVSRCADR,
  invalid_recipient: STATUS.RINVDSTADR,
  destination_not_allowed: STATUS.RINVDSTADR,
  destination_not_priced: STATUS.RINVDSTADR,
  invalid_message: STATUS.RINVMSGLEN,
  invalid_send_at: STATUS.RINVSCHED,
  invalid_validity_period: STATUS.RINVEXPIRY,
  rate_limit_exceeded: STATUS.RTHROTTLED,
  service_unavailable: STATUS.RMSGQFUL,
  insufficient_credits: STATUS.INSUFFICIENT_CREDITS,
  recipient_opted_out: STATUS.OPTED_OUT,
  daily_limit_reached: STATUS.DAILY_LIMIT,
  account_suspended: STATUS.RSUBMITFAIL,
};

/** An unexpected error is 0x08 ESME_RSYSERR, which clients retry. */
export function submitStatusFor(error: unknown): number {
  return error instanceof AppError ? (BY_CODE[error.code] ?? STATUS.RSYSERR) : STATUS.RSYSERR;
}

/** The answers a client retries (SMPP's temporary errors): the parts of a long message stay for its retry. */
export function isTemporary(status: number): boolean {
  return status === STATUS.RTHROTTLED || status === STATUS.RMSGQFUL || status === STATUS.RSYSERR;
}
