/**
 * One cell of a CSV file that people open in a spreadsheet. A cell that starts with `=`, `+`, `-`
 * or `@` (or a tab or carriage return, which some spreadsheets skip before reading a formula) is
 * prefixed with `'`, so that it is shown as text and never run as a formula (CSV injection); a
 * cell with a separator, a quote or a line break is quoted.
 */
export function csvCell(value: string | number | null | undefined): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A CSV line (CRLF-terminated, as RFC 4180 says) of escaped cells. */
export function csvLine(cells: readonly (string | number | null | undefined)[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
