/**
 * The scheduling fields of a send (DECISIONS.md §8): `send_at`, an RFC 3339 time with an offset,
 * and `validity_period`, in seconds. Pure checks; the submit use-case turns a refusal into
 * `invalid_send_at` or `invalid_validity_period`.
 */

/** A `send_at` up to this far in the past counts as now (the client's clock may be behind). */
export const SEND_AT_SKEW_MS = 30_000;
/** The furthest ahead a message may be scheduled. */
export const SEND_AT_MAX_AHEAD_MS = 35 * 24 * 60 * 60 * 1000;
export const VALIDITY_PERIOD_MIN_SECONDS = 60;
/** 72 hours. */
export const VALIDITY_PERIOD_MAX_SECONDS = 259_200;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;

export type SendAtCheck =
  /** `at` in ms since the epoch; `now` when it is within the skew (send at once). */
  { ok: true; at: number; immediate: boolean } | { ok: false; reason: string };

/** Parses an RFC 3339 date-time with a `Z` or numeric offset; NaN when it is not one. */
export function parseRfc3339(text: string): number {
  const m = RFC3339.exec(text);
  if (!m) return NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return NaN;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysInMonth) return NaN;
  let offsetMinutes = 0;
  if (m[9]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return NaN;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // Fractions below the millisecond are dropped: timestamps are stored in whole milliseconds.
  const ms = m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMinutes * 60_000;
}

/** Checks a `send_at` against the clock: not earlier than the skew allows, not over 35 days ahead. */
export function checkSendAt(text: string, now: number): SendAtCheck {
  const at = parseRfc3339(text);
  if (Number.isNaN(at)) {
    return { ok: false, reason: '`send_at` is not an RFC 3339 date-time with an offset (for example 2026-03-02T09:00:00+01:00).' };
  }
  if (at < now - SEND_AT_SKEW_MS) return { ok: false, reason: '`send_at` is in the past (more than 30 seconds ago).' };
  if (at > now + SEND_AT_MAX_AHEAD_MS) return { ok: false, reason: '`send_at` is more than 35 days ahead.' };
  return { ok: true, at, immediate: at <= now };
}

/** Whether a `validity_period` is a whole number of seconds within 60..259,200. */
export function validValidityPeriod(seconds: number): boolean {
  return Number.isInteger(seconds) && seconds >= VALIDITY_PERIOD_MIN_SECONDS && seconds <= VALIDITY_PERIOD_MAX_SECONDS;
}
