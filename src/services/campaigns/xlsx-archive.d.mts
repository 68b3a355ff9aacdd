/** Types of xlsx-archive.mjs (plain JavaScript, for the XLSX worker thread). */
export class Refused extends Error {}
export const NOT_XLSX: string;
export const UNREADABLE: string;
export function tooManyRows(maxRows: number): string;
/** Counts the rows of a sheet's XML that hold a value, fed in pieces. */
export function rowCounter(): { readonly count: number; push(bytes: Uint8Array): void };
/** The first sheet's part in the archive, from xl/workbook.xml and its relationships. */
export function firstSheetPath(workbook: string | undefined, rels: string | undefined): string | undefined;
/** Throws `Refused` for an archive over the bounds (declared or real sizes) or with too many rows. */
export function checkArchive(file: Uint8Array, bounds: { maxRows: number; maxSheetBytes: number; maxUnpackedBytes: number }): void;
