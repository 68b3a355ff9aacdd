/**
 * Delivery receipts as SMSCs send them in `deliver_sm` (esm_class 0x04): the SMPP 3.4 appendix B
 * text (`id:… sub:… dlvrd:… submit date:… done date:… stat:… err:… text:…`) and/or the TLVs
 * `receipted_message_id`, `message_state` and `network_error_code`. Pure functions: the connector
 * turns their result into a DeliveryReport.
 */

/** esm_class message type bits that mark an SMSC delivery receipt. */
export const ESM_CLASS_RECEIPT = 0x04;

export interface ParsedReceipt {
  /** The SMSC's id of the submitted part, as written in the receipt. */
  id: string;
  /** Normalised to the receipt text's 7-letter form (DELIVRD, UNDELIV, …). */
  stat: string;
  /** The SMSC's error code, as written; '' when absent. */
  err: string;
  /** `done date`, ms since the epoch, when present and valid. */
  doneAt: number | null;
}

const STATE_BY_NUMBER: Record<number, string> = {
  0: 'SCHEDULED',
  1: 'ENROUTE',
  2: 'DELIVRD',
  3: 'EXPIRED',
  4: 'DELETED',
  5: 'UNDELIV',
  6: 'ACCEPTD',
  7: 'UNKNOWN',
  8: 'REJECTD',
  9: 'SKIPPED',
};

/** Long spellings some SMSCs use in the text, mapped to the 7-letter forms. */
const STAT_ALIASES: Record<string, string> = {
  DELIVERED: 'DELIVRD',
  UNDELIVERABLE: 'UNDELIV',
  ACCEPTED: 'ACCEPTD',
  REJECTED: 'REJECTD',
};

/** `YYMMDDhhmm` or `YYMMDDhhmmss`, read as UTC (SMPP 3.4 receipts carry no zone). */
export function parseReceiptDate(value: string): number | null {
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?$/.exec(value);
  if (!m) return null;
  const [, yy, mo, dd, hh, mi, ss] = m;
  const ms = Date.UTC(2000 + Number(yy), Number(mo) - 1, Number(dd), Number(hh), Number(mi), Number(ss ?? '0'));
  const d = new Date(ms);
  if (d.getUTCMonth() !== Number(mo) - 1 || d.getUTCDate() !== Number(dd) || Number(hh) > 23 || Number(mi) > 59 || Number(ss ?? '0') > 59) return null;
  return ms;
}

function field(text: string, name: string): string | null {
  // Field names may contain a space ("done date"); values run to the next space.
  const m = new RegExp(`(?:^|\\s)${name.replace(' ', '\\s+')}:(\\S*)`, 'i').exec(text);
  return m ? m[1]! : null;
}

/** Parses the receipt text; null when it has no `id:` or no `stat:`. */
export function parseReceiptText(text: string): ParsedReceipt | null {
  const id = field(text, 'id');
  const stat = field(text, 'stat');
  if (!id || !stat) return null;
  const done = field(text, 'done date');
  const upper = stat.toUpperCase();
  return { id, stat: STAT_ALIASES[upper] ?? upper, err: field(text, 'err') ?? '', doneAt: done ? parseReceiptDate(done) : null };
}

export interface ReceiptFields {
  text: string | null;
  receiptedMessageId?: string | null;
  messageState?: number | null;
  /** The network_error_code TLV: network type octet, then a 2-octet error code. */
  networkErrorCode?: Uint8Array | null;
}

/**
 * Combines the TLVs and the text; the TLVs win where both are present (they are typed, the text is
 * free-form). Null when neither gives an id and a state.
 */
export function parseReceipt(fields: ReceiptFields): ParsedReceipt | null {
  const fromText = fields.text ? parseReceiptText(fields.text) : null;
  const id = fields.receiptedMessageId?.trim() || fromText?.id;
  const stat = fields.messageState !== undefined && fields.messageState !== null ? STATE_BY_NUMBER[fields.messageState] : fromText?.stat;
  if (!id || !stat) return null;
  let err = fromText?.err ?? '';
  const nec = fields.networkErrorCode;
  if (nec && nec.length >= 3) {
    const code = (nec[1]! << 8) | nec[2]!;
    if (code !== 0 || !err) err = String(code).padStart(3, '0');
  }
  return { id, stat, err, doneAt: fromText?.doneAt ?? null };
}

export type ReceiptOutcome =
  | { status: 'delivered' }
  | { status: 'failed'; errorCode: string; errorMessage: string }
  /** Not final (ACCEPTD, ENROUTE, SCHEDULED): nothing changes. */
  | null;

const FAILURES: Record<string, { errorCode: string; errorMessage: string }> = {
  EXPIRED: { errorCode: 'expired', errorMessage: 'The message expired at the carrier before it could be delivered.' },
  UNDELIV: { errorCode: 'undeliverable', errorMessage: 'The carrier could not deliver the message to the handset.' },
  REJECTD: { errorCode: 'rejected', errorMessage: 'The carrier network rejected the message.' },
  DELETED: { errorCode: 'deleted', errorMessage: 'The carrier deleted the message before it was delivered.' },
  UNKNOWN: { errorCode: 'unknown', errorMessage: 'The carrier could not tell what happened to the message.' },
  SKIPPED: { errorCode: 'rejected', errorMessage: 'The carrier skipped the message.' },
};

/** Maps a receipt state to Pigeon's: DELIVRD delivered, the final failures failed, the rest nothing. */
export function receiptOutcome(receipt: Pick<ParsedReceipt, 'stat' | 'err'>): ReceiptOutcome {
  if (receipt.stat === 'DELIVRD') return { status: 'delivered' };
  const failure = FAILURES[receipt.stat];
  if (!failure) return null;
  const err = receipt.err && !/^0+$/.test(receipt.err) ? ` (network error ${receipt.err})` : '';
  return { status: 'failed', errorCode: failure.errorCode, errorMessage: `${failure.errorMessage.slice(0, -1)}${err}.` };
}
