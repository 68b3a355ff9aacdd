/**
 * Typed configuration read once from the environment (DECISIONS.md §7). Every value is validated
 * at start so that a typo fails loudly with the variable's name instead of misbehaving later.
 */
import { loadSmppConfig, type SmppConfig } from './smpp-config.ts';
import { parseCallingCodes } from '../domain/calling-codes.ts';

export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl: string;
  carrier: 'simulator' | 'smpp';
  rateLimit: { max: number; windowMs: number };
  /** Failed `/v1` authentications allowed per client IP per window before that IP gets 429s. */
  authFailureLimit: { max: number; windowMs: number };
  /** Slow-loris guard: a request (headers and body) must arrive whole within this time. */
  requestTimeoutMs: number;
  /**
   * Addresses or CIDR ranges of reverse proxies whose `X-Forwarded-For` names the client (TRUST_PROXY);
   * empty: the socket's peer is the client. Per-IP limits count the client, not the proxy.
   */
  trustProxy: string[];
  redisUrl: string | null;
  bulkMaxMessages: number;
  /**
   * Messages waiting for dispatch beyond which sends are refused with 503 and Retry-After, so the
   * backlog stays bounded instead of growing without end when dispatch cannot keep up.
   */
  dispatchBacklogLimit: number;
  bodyLimitBytes: number;
  webhook: { timeoutMs: number; retryDelaysMs: number[]; allowPrivate: boolean };
  simulator: {
    deliveryDelayMs: number;
    /** Test aid: a file the simulator appends every submitted message id to (one per line). */
    logFile: string | null;
  };
  /** CARRIER=smpp: SMSC routes, validity period, link timings (src/config/smpp-config.ts). */
  smpp: SmppConfig;
  smtpUrl: string | null;
  /** Sender of the dashboard's e-mail (MAIL_FROM); defaults to no-reply at PUBLIC_URL's host. */
  mailFrom: string;
  logLevel: string;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** How long a claimed job is held before another worker may take it over. */
  jobLeaseMs: number;
  /** Extra reserved Sender ID names, added to the built-in list. */
  reservedSenderNames: string[];
  /**
   * Dashboard sign-up (SIGNUP): `open` (an account at once), `verify` (an e-mailed link before
   * keys or Sender IDs) or `closed` (the operator creates accounts); SIGNUP_MAX_PER_HOUR per
   * client address.
   */
  signup: { mode: 'open' | 'verify' | 'closed'; maxPerHour: number };
  /** Account limits (docs/security.md); each account may override them (`pigeon account limits`). */
  limits: {
    /** Sender IDs an account may have pending review at once (SENDER_ID_PENDING_MAX). */
    senderIdPendingMax: number;
    /** Bytes of verification documents an account may store (DOCUMENT_QUOTA_BYTES). */
    documentQuotaBytes: number;
    /** Messages per UTC day for accounts made by dashboard sign-up (NEW_ACCOUNT_DAILY_LIMIT). */
    newAccountDailyLimit: number;
    /** Calling codes messages may go to (ALLOWED_COUNTRIES); null: every country. */
    allowedCountries: string[] | null;
  };
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

function callingCodes(env: Env, name: string): string[] | null {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return null;
  const parsed = parseCallingCodes(raw);
  if (!parsed.ok) throw new ConfigError(`${name} must be comma-separated country calling codes such as 44,33: ${parsed.reason}`);
  return parsed.codes;
}

function url(env: Env, name: string, fallback: string | null, protocols: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got ${JSON.stringify(raw)}`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  const carrier = env.CARRIER?.trim() || 'simulator';
  if (carrier !== 'simulator' && carrier !== 'smpp') {
    throw new ConfigError(`CARRIER must be simulator or smpp, got ${JSON.stringify(env.CARRIER)}`);
  }
  const databaseUrl = env.DATABASE_URL?.trim() || 'sqlite:./data/pigeon.db';
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres://, got ${JSON.stringify(databaseUrl)}`);
  }
  const delaysRaw = env.WEBHOOK_RETRY_DELAYS_MS?.trim() || '0,30000,300000';
  const retryDelaysMs = delaysRaw.split(',').map((part) => {
    const s = part.trim();
    if (!/^\d+$/.test(s)) throw new ConfigError(`WEBHOOK_RETRY_DELAYS_MS must be comma-separated milliseconds, got ${JSON.stringify(delaysRaw)}`);
    return Number(s);
  });
  const signupMode = env.SIGNUP?.trim() || 'open';
  if (signupMode !== 'open' && signupMode !== 'verify' && signupMode !== 'closed') {
    throw new ConfigError(`SIGNUP must be open, verify or closed, got ${JSON.stringify(env.SIGNUP)}`);
  }
  const publicUrl = (url(env, 'PUBLIC_URL', 'http://localhost:3000', ['http:', 'https:']) as string).replace(/\/+$/, '');
  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    host: env.HOST?.trim() || '127.0.0.1',
    publicUrl,
    databaseUrl,
    carrier,
    rateLimit: { max: int(env, 'RATE_LIMIT_MAX', 100, 1), windowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 1000, 1) },
    authFailureLimit: { max: int(env, 'AUTH_FAILURE_LIMIT', 20, 1), windowMs: int(env, 'AUTH_FAILURE_WINDOW_MS', 60_000, 1000) },
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 100),
    trustProxy: (env.TRUST_PROXY ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => {
        if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(s)) throw new ConfigError(`TRUST_PROXY must be comma-separated IP addresses or CIDR ranges, got ${JSON.stringify(s)}`);
        return s;
      }),
    redisUrl: url(env, 'REDIS_URL', null, ['redis:', 'rediss:']),
    bulkMaxMessages: int(env, 'BULK_MAX_MESSAGES', 10_000, 1, 1_000_000),
    dispatchBacklogLimit: int(env, 'DISPATCH_BACKLOG_LIMIT', 200_000, 1),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 5 * 1024 * 1024, 1024),
    webhook: {
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 5000, 1),
      retryDelaysMs,
      allowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    },
    simulator: { deliveryDelayMs: int(env, 'SIM_DELIVERY_DELAY_MS', 1000, 0), logFile: env.SIM_LOG_FILE?.trim() || null },
    smpp: loadSmppConfig(env, carrier),
    smtpUrl: url(env, 'SMTP_URL', null, ['smtp:', 'smtps:']),
    mailFrom: env.MAIL_FROM?.trim() || `Pigeon <no-reply@${new URL(publicUrl).hostname}>`,
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    metricsToken: env.METRICS_TOKEN?.trim() || null,
    jobLeaseMs: int(env, 'JOB_LEASE_MS', 60_000, 1000),
    reservedSenderNames: (env.RESERVED_SENDER_NAMES ?? '')
      .split(',')
      .map((s) => s.trim().toUpperCase())
      .filter(Boolean),
    signup: { mode: signupMode, maxPerHour: int(env, 'SIGNUP_MAX_PER_HOUR', 5, 1) },
    limits: {
      senderIdPendingMax: int(env, 'SENDER_ID_PENDING_MAX', 20, 0, 1_000_000),
      documentQuotaBytes: int(env, 'DOCUMENT_QUOTA_BYTES', 50 * 1024 * 1024, 0),
      newAccountDailyLimit: int(env, 'NEW_ACCOUNT_DAILY_LIMIT', 1000, 0, 1_000_000_000),
      allowedCountries: callingCodes(env, 'ALLOWED_COUNTRIES'),
    },
  };
}
