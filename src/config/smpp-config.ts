/**
 * The SMPP part of the configuration (CARRIER=smpp, docs/smpp.md): one SMSC connection from
 * SMPP_HOST & co., or several from SMPP_ROUTES (JSON) / SMPP_ROUTES_FILE, each chosen by the
 * recipient's E.164 prefix. Values a route leaves out come from the SMPP_* variables. These fill
 * the routes table on a start that finds it empty; from then on the table is what counts
 * (`pigeon route`, docs/pricing-and-routing.md).
 */
import { readFileSync } from 'node:fs';
import { parseFailoverCodes } from '../domain/smpp-routes.ts';
import { AppError } from '../errors/catalogue.ts';
import { ConfigError } from './config-error.ts';

export interface SmppRouteConfig {
  name: string;
  /** E.164 prefixes with the `+` (e.g. `+44`, `+1415`); empty for the default route. */
  prefixes: string[];
  default: boolean;
  host: string;
  port: number;
  systemId: string;
  password: string;
  systemType: string;
  /** Submits per second; 0 means no cap. */
  tps: number;
  /** Submits sent and not yet answered. */
  window: number;
  /** Among routes with the same matching prefix, the higher goes first (default 0). */
  priority?: number;
  /** Credits the carrier charges the operator per segment, when known. */
  costPerSegment?: number | null;
  /** command_status values that send a message on to the next route (default: DEFAULT_FAILOVER_CODES). */
  failoverCodes?: number[];
}

export interface SmppConfig {
  routes: SmppRouteConfig[];
  /** A `sent` message without a receipt after this long becomes `failed` (`expired`). */
  validityHours: number;
  enquireLinkMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** A submit without a response after this long counts as a dead link. */
  responseTimeoutMs: number;
}

type Env = Record<string, string | undefined>;

function int(name: string, raw: unknown, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined || raw === null || raw === '') return fallback;
  const s = String(raw).trim();
  if (!/^\d+$/.test(s)) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(s);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function str(name: string, raw: unknown, fallback: string): string {
  if (raw === undefined || raw === null) return fallback;
  if (typeof raw !== 'string') throw new ConfigError(`${name} must be a string`);
  return raw;
}

function routeList(env: Env): unknown[] | null {
  let text = env.SMPP_ROUTES?.trim();
  let source = 'SMPP_ROUTES';
  if (!text && env.SMPP_ROUTES_FILE?.trim()) {
    source = `SMPP_ROUTES_FILE (${env.SMPP_ROUTES_FILE.trim()})`;
    try {
      text = readFileSync(env.SMPP_ROUTES_FILE.trim(), 'utf8');
    } catch (err) {
      throw new ConfigError(`${source} cannot be read: ${(err as Error).message}`);
    }
  }
  if (!text) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`${source} must be a JSON array of routes`);
  }
  if (!Array.isArray(parsed)) throw new ConfigError(`${source} must be a JSON array of routes`);
  return parsed;
}

export function loadSmppConfig(env: Env, carrier: string): SmppConfig {
  const base = {
    host: env.SMPP_HOST?.trim() ?? '',
    port: int('SMPP_PORT', env.SMPP_PORT, 2775, 1, 65535),
    systemId: env.SMPP_SYSTEM_ID ?? '',
    password: env.SMPP_PASSWORD ?? '',
    systemType: env.SMPP_SYSTEM_TYPE ?? '',
    tps: int('SMPP_TPS', env.SMPP_TPS, 0, 0, 100_000),
    window: int('SMPP_WINDOW', env.SMPP_WINDOW, 10, 1, 10_000),
  };
  const config: SmppConfig = {
    routes: [],
    validityHours: int('SMPP_VALIDITY_HOURS', env.SMPP_VALIDITY_HOURS, 48, 1, 24 * 30),
    enquireLinkMs: int('SMPP_ENQUIRE_LINK_MS', env.SMPP_ENQUIRE_LINK_MS, 30_000, 100),
    reconnectMinMs: int('SMPP_RECONNECT_MIN_MS', env.SMPP_RECONNECT_MIN_MS, 1000, 10),
    reconnectMaxMs: int('SMPP_RECONNECT_MAX_MS', env.SMPP_RECONNECT_MAX_MS, 30_000, 10),
    responseTimeoutMs: int('SMPP_RESPONSE_TIMEOUT_MS', env.SMPP_RESPONSE_TIMEOUT_MS, 30_000, 100),
  };
  if (carrier !== 'smpp') return config;

  const list = routeList(env) ?? [];
  const routes = list.map((raw, i): SmppRouteConfig => {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`SMPP route ${i + 1} must be an object`);
    const r = raw as Record<string, unknown>;
    const label = `SMPP route ${JSON.stringify(r.name ?? i + 1)}`;
    const prefixes = r.prefixes ?? [];
    if (!Array.isArray(prefixes) || !prefixes.every((p) => typeof p === 'string' && /^\+\d{1,15}$/.test(p))) {
      throw new ConfigError(`${label}: prefixes must be a list of E.164 prefixes such as "+44"`);
    }
    const route: SmppRouteConfig = {
      name: str(`${label} name`, r.name, `route${i + 1}`),
      prefixes: prefixes as string[],
      default: r.default === true || prefixes.length === 0,
      host: str(`${label} host`, r.host, base.host).trim(),
      port: int(`${label} port`, r.port, base.port, 1, 65535),
      systemId: str(`${label} system_id`, r.system_id, base.systemId),
      password: str(`${label} password`, r.password, base.password),
      systemType: str(`${label} system_type`, r.system_type, base.systemType),
      tps: int(`${label} tps`, r.tps, base.tps, 0, 100_000),
      window: int(`${label} window`, r.window, base.window, 1, 10_000),
    };
    if (r.priority !== undefined) route.priority = int(`${label} priority`, r.priority, 0, 0, 1_000_000);
    if (r.cost_per_segment !== undefined && r.cost_per_segment !== null) route.costPerSegment = int(`${label} cost_per_segment`, r.cost_per_segment, 0, 0, 1_000_000);
    if (r.failover_codes !== undefined) {
      const codes = r.failover_codes;
      if (!Array.isArray(codes) && typeof codes !== 'string') throw new ConfigError(`${label}: failover_codes must be a list such as ["0x08", "0x45"]`);
      try {
        route.failoverCodes = parseFailoverCodes(Array.isArray(codes) ? codes.map(String).join(',') : codes);
      } catch (err) {
        throw new ConfigError(`${label}: ${err instanceof AppError ? err.message : String(err)}`);
      }
    }
    return route;
  });
  if (!routes.some((r) => r.default) && base.host) routes.push({ name: 'default', prefixes: [], default: true, ...base });
  // None at all: the routes are the database's alone (`pigeon route add`).
  if (routes.length === 0) return config;
  // No default route is fine: a recipient no prefix serves fails `no_route`.
  const defaults = routes.filter((r) => r.default);
  if (defaults.length > 1) throw new ConfigError(`CARRIER=smpp needs exactly one default SMPP route (one without prefixes), got ${defaults.length}`);
  const names = new Set<string>();
  for (const r of routes) {
    if (!r.host) throw new ConfigError(`SMPP route ${JSON.stringify(r.name)} has no host (set host or SMPP_HOST)`);
    if (!r.systemId) throw new ConfigError(`SMPP route ${JSON.stringify(r.name)} has no system_id (set system_id or SMPP_SYSTEM_ID)`);
    if (names.has(r.name)) throw new ConfigError(`SMPP route name ${JSON.stringify(r.name)} is used twice`);
    names.add(r.name);
  }
  config.routes = routes;
  return config;
}
