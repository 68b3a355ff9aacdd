/**
 * SMPP routes kept in the database and managed while Pigeon runs (DECISIONS.md §11): the CLI's
 * `pigeon route` and the operator console change rows; every worker process follows the route
 * revision (migration 023) and hands the routes to its carrier within a second (`RouteSync`),
 * and writes its links' state back so that processes without sockets can say what is bound.
 * The password is kept to bind with and never leaves this module but to the carrier.
 */
import { randomUUID } from 'node:crypto';
import type { RouteLinkState } from '../../carriers/carrier.ts';
import type { SmppRouteConfig } from '../../config/smpp-config.ts';
import { DEFAULT_FAILOVER_CODES, checkRouteName, formatFailoverCode, routeFields, type RouteFields, type RouteInput } from '../../domain/smpp-routes.ts';
import { AppError } from '../../errors/catalogue.ts';
import { isUniqueViolation } from '../../store/dialect.ts';
import {
  countSmppRoutes,
  deleteSmppRoute,
  forgetRouteLinks,
  insertSmppRoutes,
  liveRouteLinks,
  readRouteRevision,
  smppRouteRow,
  smppRouteRows,
  updateSmppRoute,
  writeRouteLinks,
  type SmppRouteRow,
} from '../../store/repositories/smpp-routes.repository.ts';
import { recordAudit } from '../audit/audit.ts';
import { changesBetween } from '../../domain/audit.ts';
import type { Context } from '../context.ts';

/** A link row not refreshed for this long belongs to a process that is gone (rows are refreshed every second). */
export const LINK_STALE_MS = 5_000;
/** How often a worker process checks the route revision and refreshes its link rows. */
export const ROUTE_SYNC_MS = 500;
const LINK_REFRESH_MS = 1_000;

/** A route as the operator sees it: never its password. */
export interface Route {
  name: string;
  prefixes: string[];
  priority: number;
  host: string;
  port: number;
  system_id: string;
  system_type: string;
  tps: number;
  window: number;
  cost_per_segment: number | null;
  /** `0x45` style. */
  failover_codes: string[];
  created_at: number;
  updated_at: number;
}

export interface RouteWithState extends Route {
  /** Bound in at least one worker process. */
  bound: boolean;
  /** Each worker process's link: its state and, when not bound, why. */
  links: { state: string; last_error: string | null; seen_at: number }[];
}

function codesOf(text: string): number[] {
  return text === '' ? [] : text.split(',').map(Number);
}

function fieldsOf(row: SmppRouteRow): RouteFields {
  return {
    prefixes: row.prefixes.split(','),
    host: row.host,
    port: row.port,
    systemId: row.system_id,
    password: row.password,
    systemType: row.system_type,
    tps: row.tps,
    window: row.window_size,
    priority: row.priority,
    costPerSegment: row.cost_per_segment,
    failoverCodes: codesOf(row.failover_codes),
  };
}

/** A route's settings as the audit log records them (the password passes the log's redaction). */
function auditFields(row: SmppRouteRow): Record<string, unknown> {
  const { created_at: _c, updated_at: _u, name: _n, ...fields } = row;
  return fields;
}

function rowOf(name: string, f: RouteFields, createdAt: number, now: number): SmppRouteRow {
  return {
    name,
    prefixes: f.prefixes.join(','),
    host: f.host,
    port: f.port,
    system_id: f.systemId,
    password: f.password,
    system_type: f.systemType,
    tps: f.tps,
    window_size: f.window,
    priority: f.priority,
    cost_per_segment: f.costPerSegment,
    failover_codes: f.failoverCodes.join(','),
    created_at: createdAt,
    updated_at: now,
  };
}

function shown(row: SmppRouteRow): Route {
  return {
    name: row.name,
    prefixes: row.prefixes.split(','),
    priority: row.priority,
    host: row.host,
    port: row.port,
    system_id: row.system_id,
    system_type: row.system_type,
    tps: row.tps,
    window: row.window_size,
    cost_per_segment: row.cost_per_segment,
    failover_codes: codesOf(row.failover_codes).map(formatFailoverCode),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The carrier's view of a row: what it binds and routes with. */
export function routeConfigOf(row: SmppRouteRow): SmppRouteConfig {
  const fields = fieldsOf(row);
  return { name: row.name, ...fields, default: fields.prefixes.includes('+') };
}

/** Every route by name, with whether a worker process has it bound. */
export async function listRoutes(ctx: Context): Promise<RouteWithState[]> {
  const [rows, links] = await Promise.all([smppRouteRows(ctx.store.db), liveRouteLinks(ctx.store.db, ctx.clock() - LINK_STALE_MS)]);
  return rows.map((row) => {
    const own = links.filter((l) => l.route === row.name).map((l) => ({ state: l.state, last_error: l.last_error, seen_at: l.seen_at }));
    return { ...shown(row), bound: own.some((l) => l.state === 'bound'), links: own };
  });
}

export async function getRoute(ctx: Context, name: string): Promise<RouteWithState> {
  const route = (await listRoutes(ctx)).find((r) => r.name === name);
  if (!route) throw new AppError('not_found', `No route ${name}.`);
  return route;
}

export async function addRoute(ctx: Context, name: string, input: RouteInput): Promise<Route> {
  checkRouteName(name);
  const now = ctx.clock();
  const row = rowOf(name, routeFields(input, null), now, now);
  try {
    await ctx.store.db.transaction().execute(async (trx) => {
      await insertSmppRoutes(trx, [row]);
      await recordAudit(ctx, { action: 'route.added', accountId: null, target: { type: 'route', id: name }, changes: changesBetween(null, auditFields(row)) }, trx);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('route_name_taken', `A route named ${name} exists already.`);
    throw error;
  }
  ctx.log.info({ route: name, host: row.host, port: row.port, prefixes: row.prefixes }, 'route added');
  return shown(row);
}

export async function updateRoute(ctx: Context, name: string, input: RouteInput): Promise<Route> {
  const current = await smppRouteRow(ctx.store.db, name);
  if (!current) throw new AppError('not_found', `No route ${name}.`);
  const now = ctx.clock();
  const row = rowOf(name, routeFields(input, fieldsOf(current)), current.created_at, now);
  const { name: _name, created_at: _created, ...changes } = row;
  await ctx.store.db.transaction().execute(async (trx) => {
    if (!(await updateSmppRoute(trx, name, changes))) throw new AppError('not_found', `No route ${name}.`);
    await recordAudit(ctx, { action: 'route.updated', accountId: null, target: { type: 'route', id: name }, changes: changesBetween(auditFields(current), auditFields(row)) }, trx);
  });
  ctx.log.info({ route: name, host: row.host, port: row.port, prefixes: row.prefixes }, 'route updated');
  return shown(row);
}

export async function removeRoute(ctx: Context, name: string): Promise<Route> {
  const current = await smppRouteRow(ctx.store.db, name);
  await ctx.store.db.transaction().execute(async (trx) => {
    if (!current || !(await deleteSmppRoute(trx, name))) throw new AppError('not_found', `No route ${name}.`);
    await recordAudit(ctx, { action: 'route.removed', accountId: null, target: { type: 'route', id: name }, changes: changesBetween(auditFields(current), null) }, trx);
  });
  if (!current) throw new AppError('not_found', `No route ${name}.`);
  ctx.log.info({ route: name }, 'route removed');
  return shown(current);
}

/**
 * Fills an empty routes table from SMPP_ROUTES / SMPP_ROUTES_FILE / SMPP_HOST (the configuration's
 * routes); returns how many it wrote. A table with rows is left as it is: from then on the
 * database is what counts. Two processes starting at once: the second's insert fails on the
 * names and it keeps the first's.
 */
export async function seedRoutes(ctx: Context, routes: readonly SmppRouteConfig[]): Promise<number> {
  if (routes.length === 0 || (await countSmppRoutes(ctx.store.db)) > 0) return 0;
  const now = ctx.clock();
  const rows = routes.map((r) =>
    rowOf(
      r.name,
      {
        prefixes: r.default ? [...r.prefixes, '+'] : r.prefixes,
        host: r.host,
        port: r.port,
        systemId: r.systemId,
        password: r.password,
        systemType: r.systemType,
        tps: r.tps,
        window: r.window,
        priority: r.priority ?? 0,
        costPerSegment: r.costPerSegment ?? null,
        failoverCodes: r.failoverCodes ?? [...DEFAULT_FAILOVER_CODES],
      },
      now,
      now,
    ),
  );
  try {
    await ctx.store.db.transaction().execute((trx) => insertSmppRoutes(trx, rows));
  } catch (error) {
    if (isUniqueViolation(error)) return 0;
    throw error;
  }
  ctx.log.info({ routes: rows.map((r) => r.name) }, 'routes table filled from the SMPP configuration');
  return rows.length;
}

/** The routes as the carrier takes them. */
export async function routeConfigs(ctx: Context): Promise<SmppRouteConfig[]> {
  return (await smppRouteRows(ctx.store.db)).map(routeConfigOf);
}

interface RoutedCarrier {
  setRoutes?(routes: SmppRouteConfig[]): void;
  routeLinks?(): RouteLinkState[];
}

/**
 * One worker process's follower of the routes table: `sync` (every ROUTE_SYNC_MS) reads the
 * revision, hands the carrier the routes when it moved, and writes the links' state when it
 * changed or a second has passed.
 */
export class RouteSync {
  readonly process = randomUUID();
  #revision: number | null = null;
  #written = '';
  #writtenAt = 0;

  constructor(
    private readonly ctx: Context,
    private readonly carrier: RoutedCarrier,
  ) {}

  /** Fills an empty table from the configuration, then gives the carrier the table's routes. */
  async load(): Promise<void> {
    await seedRoutes(this.ctx, this.ctx.config.smpp.routes);
    await this.#reload();
  }

  async #reload(): Promise<void> {
    const revision = await readRouteRevision(this.ctx.store.db);
    const routes = await routeConfigs(this.ctx);
    this.carrier.setRoutes?.(routes);
    this.#revision = revision;
  }

  async sync(): Promise<void> {
    if (this.#revision === null) await this.load();
    else if ((await readRouteRevision(this.ctx.store.db)) !== this.#revision) await this.#reload();
    const links = this.carrier.routeLinks?.() ?? [];
    const now = this.ctx.clock();
    const text = JSON.stringify(links);
    if (text === this.#written && now - this.#writtenAt < LINK_REFRESH_MS) return;
    await writeRouteLinks(
      this.ctx.store.db,
      this.process,
      links.map((l) => ({ route: l.route, state: l.state, last_error: l.lastError, seen_at: now })),
      now - LINK_STALE_MS,
    );
    this.#written = text;
    this.#writtenAt = now;
  }

  /** Removes this process's link rows (it stops). */
  async forget(): Promise<void> {
    await forgetRouteLinks(this.ctx.store.db, this.process);
  }
}
