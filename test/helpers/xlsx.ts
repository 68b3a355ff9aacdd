/**
 * A minimal XLSX workbook built in memory for tests: one sheet, strings and numbers, rows at the
 * positions given (a gap leaves the sheet's rows empty there). Strings are inline by default;
 * `sharedStrings` stores them once in xl/sharedStrings.xml and refers to them by index, as Excel
 * does, with a styles part and column spans on the rows.
 */
import { zipSync, strToU8 } from 'fflate';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const column = (i: number) => (i < 26 ? String.fromCharCode(65 + i) : String.fromCharCode(64 + Math.floor(i / 26)) + String.fromCharCode(65 + (i % 26)));

const CONTENT_TYPES = (shared: boolean) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>${
    shared
      ? '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
      : ''
  }</Types>`;

const WORKBOOK_RELS = (shared: boolean) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>${
    shared
      ? '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>'
      : ''
  }</Relationships>`;

const STYLES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><numFmts count="0"/><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts><fills count="1"><fill><patternFill patternType="none"/></fill></fills><borders count="1"><border/></borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs><cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs></styleSheet>';

/** `rows` maps a 1-based sheet row number to its cells (a number is a numeric cell). */
export function xlsxWorkbook(rows: Map<number, (string | number)[]> | Iterable<[number, (string | number)[]]>, opts: { sharedStrings?: boolean } = {}): Buffer {
  const shared = opts.sharedStrings === true;
  const strings = new Map<string, number>();
  const sheetRows: string[] = [];
  for (const [r, cells] of [...rows].sort(([a], [b]) => a - b)) {
    const xml = cells.map((c, i) => {
      const ref = `${column(i)}${r}`;
      if (typeof c === 'number') return `<c r="${ref}"><v>${c}</v></c>`;
      if (!shared) return `<c r="${ref}" t="inlineStr"><is><t>${esc(c)}</t></is></c>`;
      let index = strings.get(c);
      if (index === undefined) strings.set(c, (index = strings.size));
      return `<c r="${ref}" t="s"><v>${index}</v></c>`;
    });
    sheetRows.push(shared ? `<row r="${r}" spans="1:${cells.length}">${xml.join('')}</row>` : `<row r="${r}">${xml.join('')}</row>`);
  }
  const files: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8(CONTENT_TYPES(shared)),
    '_rels/.rels': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
    ),
    'xl/workbook.xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>',
    ),
    'xl/_rels/workbook.xml.rels': strToU8(WORKBOOK_RELS(shared)),
    'xl/worksheets/sheet1.xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${sheetRows.join('')}</sheetData></worksheet>`,
    ),
  };
  if (shared) {
    files['xl/sharedStrings.xml'] = strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${strings.size}" uniqueCount="${strings.size}">${[...strings.keys()].map((s) => `<si><t>${esc(s)}</t></si>`).join('')}</sst>`,
    );
    files['xl/styles.xml'] = strToU8(STYLES);
  }
  return Buffer.from(zipSync(files));
}

/** The rows of a campaign of `count` recipients: a header, then `to`, first and last name, city and an amount. */
export function* campaignSheetRows(count: number): Generator<[number, (string | number)[]]> {
  const cities = ['Paris', 'Lyon', 'Marseille', 'Toulouse', 'Nantes', 'Lille', 'Bordeaux', 'Nice'];
  yield [1, ['to', 'first_name', 'last_name', 'city', 'amount']];
  for (let i = 0; i < count; i++) yield [i + 2, [`+336${String(10_000_000 + i)}`, `Name${i % 5000}`, `Surname${i % 7919}`, cities[i % cities.length]!, (i % 1000) + 0.5]];
}
