/**
 * A wall-clock time in an IANA time zone (the campaign composer's "Monday 9:00 in my time zone")
 * to an instant. A time that a daylight-saving change skips (02:30 on the night clocks go forward
 * in Paris) does not exist, and one that it repeats (02:30 on the night they go back) names two
 * instants: both are refused with a reason the owner can act on, never guessed.
 */

export type LocalTimeResult =
  | { ok: true; at: number }
  | { ok: false; code: 'invalid' | 'unknown_zone' | 'skipped' | 'repeated'; reason: string };

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone.length > 0 && zone.length <= 64;
  } catch {
    return false;
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock fields of `at` in `zone`, as ms since the epoch read as UTC. */
export function wallClock(at: number, zone: string): number {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(new Date(at)).map((p) => [p.type, p.value]));
  return Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
}

/** `YYYY-MM-DDTHH:MM[:SS]` (as a `datetime-local` input gives it) in `zone`, to ms since the epoch. */
export function localTimeToInstant(local: string, zone: string): LocalTimeResult {
  const m = LOCAL.exec(local.trim());
  if (!m) return { ok: false, code: 'invalid', reason: 'The date and time are not of the form 2026-03-02T09:00.' };
  if (!isTimeZone(zone)) return { ok: false, code: 'unknown_zone', reason: `${zone} is not a known time zone.` };
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  const wanted = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(wanted);
  if (check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    return { ok: false, code: 'invalid', reason: 'That date does not exist.' };
  }
  // The zone's offsets around that day (an offset changes at most once or twice a day): each that
  // maps back to the wanted wall-clock time gives an instant.
  const offsets = new Set([-36, -12, 0, 12, 36].map((hours) => wallClock(wanted + hours * 3_600_000, zone) - (wanted + hours * 3_600_000)));
  const instants = [...new Set([...offsets].map((o) => wanted - o).filter((at) => wallClock(at, zone) === wanted))].sort((a, b) => a - b);
  if (instants.length === 0) {
    return { ok: false, code: 'skipped', reason: `${local.replace('T', ' ')} does not exist in ${zone}: the clocks skip it for daylight saving time. Choose another time.` };
  }
  if (instants.length > 1) {
    return { ok: false, code: 'repeated', reason: `${local.replace('T', ' ')} happens twice in ${zone}: the clocks go back for daylight saving time. Choose another time.` };
  }
  return { ok: true, at: instants[0]! };
}
