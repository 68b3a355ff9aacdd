/**
 * Message templates for campaigns: `{{first_name}}` is replaced, row by row, by that column's
 * value. The dashboard's campaign composer and the CSV example (examples/csv-campaign) use this
 * one syntax, so a template means the same in both. The API itself stays per-message text.
 *
 * A placeholder is `{{`, optional spaces, a column name of letters, digits, `_` or `-`, optional
 * spaces, `}}`; names match column headers without regard to case or surrounding spaces, and a
 * header's inner spaces count as `_` (a column `First Name` is `{{first_name}}`), since contact
 * exports name their columns in words. Anything else is literal text, braces included.
 */

/** The line a campaign adds to each message when the owner asks for it (composer and example alike). */
export const OPT_OUT_LINE = 'Reply STOP to opt out';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)\s*\}\}/g;

/** A column name as templates compare it. */
export function columnKey(name: string): string {
  return name.trim().toLowerCase().replace(/\s+/g, '_');
}

/** The distinct column keys a template names, in order of first use. */
export function placeholders(template: string): string[] {
  const seen = new Set<string>();
  for (const m of template.matchAll(PLACEHOLDER)) seen.add(columnKey(m[1]!));
  return [...seen];
}

/** The placeholders that name no column of `headers` (the template cannot be filled). */
export function unknownPlaceholders(template: string, headers: readonly string[]): string[] {
  const known = new Set(headers.map(columnKey));
  return placeholders(template).filter((p) => !known.has(p));
}

/**
 * Fills a template from one row (column key → value). A placeholder whose column the row does not
 * have is left as written and reported in `missing`; the caller decides whether that refuses the
 * row (the composer checks `unknownPlaceholders` against the headers first, so it never happens
 * there).
 */
export function fillTemplate(template: string, row: ReadonlyMap<string, string>): { text: string; missing: string[] } {
  const missing: string[] = [];
  const text = template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = row.get(columnKey(name));
    if (value === undefined) {
      missing.push(columnKey(name));
      return whole;
    }
    return value;
  });
  return { text, missing };
}

/** A row as `fillTemplate` takes it, from headers and the row's cells (missing cells are empty). */
export function rowValues(headers: readonly string[], cells: readonly string[]): Map<string, string> {
  const row = new Map<string, string>();
  headers.forEach((h, i) => {
    const key = columnKey(h);
    if (!row.has(key)) row.set(key, cells[i] ?? '');
  });
  return row;
}
