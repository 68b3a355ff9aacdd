/** How a command prints: one JSON object with --json, readable text otherwise. */
export interface Output {
  json: boolean;
  print(result: object, text: string): void;
}

export function output(json: boolean): Output {
  return {
    json,
    print(result, text) {
      process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${text}\n`);
    },
  };
}

/** Rows as aligned columns; no rows: "No <what> found." (the one wording every list uses). */
export function table(rows: Record<string, unknown>[], columns: string[], what = 'records'): string {
  if (rows.length === 0) return nothingFound(what);
  const cells = rows.map((r) => columns.map((c) => String(r[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

export function nothingFound(what: string): string {
  return `No ${what} found.`;
}
