/**
 * SMPP routes as the operator writes them (DECISIONS.md §11): the checks on each field, and the
 * order in which a message tries the routes that serve its recipient.
 */
import { AppError } from '../errors/catalogue.ts';

/** What sends a message on to the next route by default: system error, queue full, submit failed, throttled. */
export const DEFAULT_FAILOVER_CODES: readonly number[] = [0x08, 0x14, 0x45, 0x58];

export const ROUTE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;
const PREFIX_PATTERN = /^\+\d{0,15}$/;

/** A route's fields as the CLI and the console give them; absent ones keep their value (or default). */
export interface RouteInput {
  prefixes?: string;
  host?: string;
  port?: string | number;
  systemId?: string;
  password?: string;
  systemType?: string;
  tps?: string | number;
  window?: string | number;
  priority?: string | number;
  /** Empty string: no cost recorded. */
  costPerSegment?: string | number | null;
  failoverCodes?: string;
}

export interface RouteFields {
  prefixes: string[];
  host: string;
  port: number;
  systemId: string;
  password: string;
  systemType: string;
  tps: number;
  window: number;
  priority: number;
  costPerSegment: number | null;
  failoverCodes: number[];
}

function bad(message: string): AppError {
  return new AppError('invalid_request', message);
}

export function checkRouteName(name: string): string {
  if (!ROUTE_NAME_PATTERN.test(name)) throw bad(`A route name is 1 to 40 of A-Z, a-z, 0-9, _ and -; ${JSON.stringify(name.slice(0, 60))} is not.`);
  return name;
}

/** `+44,+353` (spaces allowed); `+` alone is the catch-all. Duplicates are dropped. */
export function parsePrefixes(text: string): string[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw bad('--prefixes needs at least one E.164 prefix such as +44 (or + for every recipient).');
  for (const p of items) if (!PREFIX_PATTERN.test(p)) throw bad(`${JSON.stringify(p.slice(0, 30))} is not a prefix: + and up to 15 digits, such as +44.`);
  return [...new Set(items)];
}

/** `0x08,0x45` or decimal `8,69`: SMPP command_status values. Empty: none. */
export function parseFailoverCodes(text: string): number[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const codes = items.map((s) => {
    const value = /^0x[0-9a-f]{1,8}$/i.test(s) ? Number.parseInt(s.slice(2), 16) : /^\d{1,10}$/.test(s) ? Number(s) : Number.NaN;
    if (!Number.isInteger(value) || value <= 0 || value > 0xffffffff) throw bad(`${JSON.stringify(s.slice(0, 20))} is not an SMPP command_status such as 0x45.`);
    return value;
  });
  return [...new Set(codes)];
}

export function formatFailoverCode(code: number): string {
  return `0x${code.toString(16).toUpperCase().padStart(2, '0')}`;
}

function whole(raw: string | number, flag: string, min: number, max: number): number {
  const s = String(raw).trim();
  if (!/^\d{1,9}$/.test(s) || Number(s) < min || Number(s) > max) throw bad(`${flag} is a whole number from ${min} to ${max}.`);
  return Number(s);
}

function text(raw: string, flag: string, max: number, required: boolean): string {
  if (/[\u0000-\u001f]/.test(raw)) throw bad(`${flag} has a control character.`);
  if (raw.length > max) throw bad(`${flag} is at most ${max} characters.`);
  if (required && raw.trim() === '') throw bad(`${flag} is required.`);
  return raw;
}

/**
 * The route's fields after `input` is applied to `current` (null for a new route, which then needs
 * prefixes, host, port, system id and password). SMPP 3.4 limits: system_id 15 characters,
 * password 8, system_type 12.
 */
export function routeFields(input: RouteInput, current: RouteFields | null): RouteFields {
  if (!current) {
    for (const [value, flag] of [
      [input.prefixes, '--prefixes'],
      [input.host, '--host'],
      [input.port, '--port'],
      [input.systemId, '--system-id'],
      [input.password, '--password'],
    ] as const) {
      if (value === undefined || String(value).trim() === '') throw bad(`A new route needs ${flag}.`);
    }
  }
  const base: RouteFields = current ?? {
    prefixes: [],
    host: '',
    port: 2775,
    systemId: '',
    password: '',
    systemType: '',
    tps: 0,
    window: 10,
    priority: 0,
    costPerSegment: null,
    failoverCodes: [...DEFAULT_FAILOVER_CODES],
  };
  const cost = input.costPerSegment;
  return {
    prefixes: input.prefixes !== undefined ? parsePrefixes(input.prefixes) : base.prefixes,
    host: input.host !== undefined ? text(input.host, '--host', 253, true).trim() : base.host,
    port: input.port !== undefined ? whole(input.port, '--port', 1, 65535) : base.port,
    systemId: input.systemId !== undefined ? text(input.systemId, '--system-id', 15, true) : base.systemId,
    password: input.password !== undefined ? text(input.password, '--password', 8, true) : base.password,
    systemType: input.systemType !== undefined ? text(input.systemType, '--system-type', 12, false) : base.systemType,
    tps: input.tps !== undefined ? whole(input.tps, '--tps', 0, 100_000) : base.tps,
    window: input.window !== undefined ? whole(input.window, '--window', 1, 10_000) : base.window,
    priority: input.priority !== undefined ? whole(input.priority, '--priority', 0, 1_000_000) : base.priority,
    costPerSegment: cost === undefined ? base.costPerSegment : cost === null || String(cost).trim() === '' ? null : whole(cost, '--cost-per-segment', 0, 1_000_000),
    failoverCodes: input.failoverCodes !== undefined ? parseFailoverCodes(input.failoverCodes) : base.failoverCodes,
  };
}

/** How long the longest of `prefixes` matching `recipient` is; -1 when none does. `+` matches all. */
export function matchLength(prefixes: readonly string[], recipient: string): number {
  let best = -1;
  for (const p of prefixes) if (recipient.startsWith(p) && p.length > best) best = p.length;
  return best;
}

/**
 * The routes that serve `recipient`, in the order a message tries them: the longest matching
 * prefix first, then the highest priority, then by name (so every process agrees).
 */
export function routeCandidates<R extends { name: string; prefixes: readonly string[]; priority: number }>(routes: readonly R[], recipient: string): R[] {
  return routes
    .map((route) => ({ route, length: matchLength(route.prefixes, recipient) }))
    .filter((c) => c.length >= 0)
    .sort((a, b) => b.length - a.length || b.route.priority - a.route.priority || (a.route.name < b.route.name ? -1 : a.route.name > b.route.name ? 1 : 0))
    .map((c) => c.route);
}

/** What a day and a route cost and earned, from the messages the route took. */
export type MarginRow = {
  day: string;
  route: string;
  messages: number;
  segments: number;
  credits_charged: number;
  carrier_cost: number;
  margin: number;
};
