/**
 * SMPP 3.4 time fields (§7.1.1): `schedule_delivery_time` and `validity_period` as
 * `YYMMDDhhmmsstnnp`, absolute (`p` `+` or `-`: `nn` quarter hours ahead of or behind UTC) or
 * relative (`p` `R`: an offset from now, `tnn` 000). An empty field means "none".
 */
export type SmppTime = { ok: true; at: number | null; relativeMs?: number } | { ok: false; reason: string };

const FORM = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d)(\d{2})([+\-R])$/;
const DAY_MS = 86_400_000;

export function parseSmppTime(text: string, now: number): SmppTime {
  if (text === '') return { ok: true, at: null };
  const m = FORM.exec(text);
  if (!m) return { ok: false, reason: `${JSON.stringify(text.slice(0, 20))} is not YYMMDDhhmmsstnnp` };
  const [yy, mo, dd, hh, mi, ss, t, nn] = m.slice(1, 9).map(Number) as [number, number, number, number, number, number, number, number];
  const p = m[9]!;
  if (p === 'R') {
    // Months and years have no fixed length; SMSCs count them as 30 and 365 days.
    const ms = ((yy * 365 + mo * 30 + dd) * 24 * 3600 + hh * 3600 + mi * 60 + ss) * 1000;
    return { ok: true, at: now + ms, relativeMs: ms };
  }
  if (mo < 1 || mo > 12 || dd < 1 || dd > 31 || hh > 23 || mi > 59 || ss > 59 || nn > 48) {
    return { ok: false, reason: `${JSON.stringify(text)} is not a date and time` };
  }
  const local = Date.UTC(2000 + yy, mo - 1, dd, hh, mi, ss, t * 100);
  if (new Date(local).getUTCDate() !== dd) return { ok: false, reason: `${JSON.stringify(text)} names a day its month does not have` };
  const offset = nn * 15 * 60_000;
  return { ok: true, at: p === '+' ? local - offset : local + offset };
}

/** `at` as a relative validity in whole seconds from `from`, or null when it is already past. */
export function secondsFrom(at: number, from: number): number | null {
  const s = Math.round((at - from) / 1000);
  return s > 0 ? s : null;
}

export { DAY_MS };
