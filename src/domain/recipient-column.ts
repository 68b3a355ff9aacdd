/**
 * Which column of a campaign file holds the phone numbers. Contact lists exported from phones,
 * CRMs and spreadsheets name it in many ways (`Phone Number`, `MOBILE`, `msisdn`, `Cell`), so the
 * header is matched against the usual names, in any case and spacing. When no column or more than
 * one matches, guessing could send every message to the wrong number: the owner is asked.
 */

/** The usual names of a recipient column, as `recipientKey` writes them. */
export const RECIPIENT_COLUMN_NAMES: readonly string[] = ['to', 'phone', 'phonenumber', 'mobile', 'mobilenumber', 'cell', 'msisdn', 'number', 'recipient'];

/** The usual names as people write them, for messages. */
export const RECIPIENT_COLUMN_LABELS: readonly string[] = ['to', 'phone', 'phone number', 'mobile', 'mobile number', 'cell', 'msisdn', 'number', 'recipient'];

const KNOWN = new Set(RECIPIENT_COLUMN_NAMES);

/** A header as it is compared with the usual names: lower case, without spaces, `_`, `-` or `.`. */
export function recipientKey(header: string): string {
  return header.toLowerCase().replace(/[\s_.-]+/g, '');
}

export type RecipientColumn =
  | { ok: true; index: number; how: 'chosen' | 'found' }
  /** `candidates` (indexes in the header) is empty when no column has a usual name. */
  | { ok: false; candidates: number[] };

/**
 * The recipient column of `headers`: the one the owner `chosen` (by its header, as written or by
 * key) when the file has it, else the only column with a usual name. A chosen column the file
 * lacks (remembered from another file) does not refuse the file: the names decide, as if none was
 * chosen.
 */
export function findRecipientColumn(headers: readonly string[], chosen?: string | null): RecipientColumn {
  const wanted = chosen?.trim() ?? '';
  if (wanted !== '') {
    let index = headers.findIndex((h) => h.trim() === wanted);
    if (index < 0) index = headers.findIndex((h) => recipientKey(h) === recipientKey(wanted) && recipientKey(h) !== '');
    if (index >= 0) return { ok: true, index, how: 'chosen' };
  }
  const candidates: number[] = [];
  headers.forEach((h, i) => {
    if (KNOWN.has(recipientKey(h))) candidates.push(i);
  });
  return candidates.length === 1 ? { ok: true, index: candidates[0]!, how: 'found' } : { ok: false, candidates };
}
