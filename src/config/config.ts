/**
 * Typed configuration read once from the environment (DECISIONS.md §7). Every value is validated
 * at start so that a typo fails loudly with the variable's name instead of misbehaving later.
 */
import { isIP } from 'node:net';
import { ConfigError, type ConfigProblem } from './config-error.ts';
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
   * The most messages waiting for dispatch: a send that would take the backlog past it is refused
   * with 503 and Retry-After, so the backlog stays bounded instead of growing without end when
   * dispatch cannot keep up.
   */
  dispatchBacklogLimit: number;
  /**
   * The share of `dispatchBacklogLimit`, in per cent, that one account's waiting messages may
   * hold (DISPATCH_BACKLOG_ACCOUNT_SHARE): that account's sends that would take it past its share
   * get 429 while the others' go on, so one campaign cannot fill the backlog for everyone.
   */
  dispatchBacklogAccountShare: number;
  bodyLimitBytes: number;
  webhook: { timeoutMs: number; retryDelaysMs: number[]; allowPrivate: boolean };
  simulator: {
    deliveryDelayMs: number;
    /** Test aid: a file the simulator appends every submitted message id to (one per line). */
    logFile: string | null;
  };
  /**
   * The SMPP listener customers bind to (DECISIONS.md §10): SMPP_SERVER_PORT (0: off) on HOST,
   * how long receipts wait for a receiver bind, and the session timings (shortened by tests).
   */
  smppServer: {
    port: number;
    /** SMPP_SERVER_TLS_PORT with SMPP_SERVER_TLS_CERT and _KEY (PEM files); null: no TLS listener. */
    tls: { port: number; certFile: string; keyFile: string } | null;
    queueHours: number;
    bindTimeoutMs: number;
    enquireLinkMs: number;
    responseTimeoutMs: number;
    partsTimeoutMs: number;
  };
  /** CARRIER=smpp: SMSC routes, validity period, link timings (src/config/smpp-config.ts). */
  smpp: SmppConfig;
  smtpUrl: string | null;
  /** Sender of the dashboard's e-mail (MAIL_FROM); defaults to no-reply at PUBLIC_URL's host. */
  mailFrom: string;
  logLevel: string;
  /** LOG_FORMAT: `pretty` (for people), `json` (for collectors), or `auto`: pretty on a terminal. */
  logFormat: 'auto' | 'pretty' | 'json';
  /** LOG_REQUESTS: one info line per HTTP request (method, path, status, time, account). */
  logRequests: boolean;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** How long a claimed job is held before another worker may take it over. */
  jobLeaseMs: number;
  /**
   * SQLITE_SYNCHRONOUS: `normal` (a commit survives the process, not a power cut) or `full` (every
   * commit is on disk before its answer); docs/deployment.md weighs the two.
   */
  sqliteSynchronous: 'normal' | 'full';
  /** Extra reserved Sender ID names, added to the built-in list. */
  reservedSenderNames: string[];
  /**
   * Dashboard sign-up (SIGNUP): `open` (an account at once), `verify` (an e-mailed link before
   * keys or Sender IDs) or `closed` (the operator creates accounts); SIGNUP_MAX_PER_HOUR per
   * client address.
   */
  signup: { mode: 'open' | 'verify' | 'closed'; maxPerHour: number };
  /** OPERATOR_REQUIRE_2FA: an operator without two-factor sets it up before any console page. */
  operatorRequire2fa: boolean;
  /**
   * Scheduled backups of a SQLite store (BACKUP_DIR, BACKUP_INTERVAL_HOURS, BACKUP_KEEP), taken by
   * each process with workers; null when off (the default).
   */
  backup: { dir: string; intervalHours: number; keep: number } | null;
  /**
   * How long stored data is kept (DECISIONS.md §13, docs/privacy.md), in days; an account may be
   * set shorter (`pigeon account retention`). `maskNumbersDays` 0: numbers are never masked.
   */
  retention: { bodyDays: number; messageDays: number; maskNumbersDays: number; /** RETENTION_AUDIT_DAYS: days the audit log keeps a record (DECISIONS.md §15). */ auditDays: number };
  /**
   * Tracked links (DECISIONS.md §16, docs/guides/marketing.md): LINK_BASE_URL, what a link in a
   * message is rewritten to before its code (default PUBLIC_URL + `/l`); LINK_TTL_DAYS, how long
   * a link redirects; LINK_FALLBACK_URL, where an unknown or expired link goes (null: a 404 page);
   * LINK_RATE_LIMIT_MAX fetches of `/l/` per client address (IPv6: per /64) per
   * LINK_RATE_LIMIT_WINDOW_MS.
   */
  links: { baseUrl: string; ttlDays: number; fallbackUrl: string | null; rateLimit: { max: number; windowMs: number } };
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

export { ConfigError, type ConfigProblem } from './config-error.ts';

type Env = Record<string, string | undefined>;

/** Variables whose whole value is a secret. */
const SECRET_NAME = /PASSWORD|TOKEN|SECRET/;

/** The value as it may be printed: passwords in URLs and secret variables masked. */
export function maskValue(name: string, raw: string | undefined): string | null {
  if (raw === undefined) return null;
  if (SECRET_NAME.test(name)) return raw === '' ? '' : '***';
  return maskUrlPassword(raw);
}

/** `postgres://user:pass@host/db` becomes `postgres://user:***@host/db`. */
export function maskUrlPassword(text: string): string {
  return text.replace(/(\/\/[^:/@\s]*:)[^@\s]*@/g, '$1***@');
}

/** The problems of the `loadConfig` call in progress; outside one, a problem throws at once. */
let collecting: ConfigProblem[] | null = null;

/** Records a problem with `name` (or throws it when no `loadConfig` is collecting). */
function problem(env: Env, name: string, message: string, hint: string): void {
  const found = { variable: name, value: maskValue(name, env[name]), message, hint };
  if (!collecting) throw new ConfigError(describeProblem(found), [found]);
  collecting.push(found);
}

/** `PORT="abc": must be a whole number. Unset it ...` */
export function describeProblem(p: ConfigProblem): string {
  const where = p.value === null ? p.variable : `${p.variable}=${JSON.stringify(p.value)}`;
  return `${where}: ${p.message}${p.hint ? `. ${p.hint}` : ''}`;
}

/** Runs a part of the loading that throws ConfigError itself, recording its problem instead. */
function collect<T>(load: () => T, fallback: T): T {
  try {
    return load();
  } catch (err) {
    if (!(err instanceof ConfigError) || !collecting) throw err;
    collecting.push(...err.problems);
    return fallback;
  }
}

function defaultHint(fallback: unknown): string {
  return fallback === null || fallback === undefined || fallback === '' ? 'Fix it or unset it' : `Fix it, or unset it for the default (${String(fallback)})`;
}

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    problem(env, name, `must be a whole number${max === Number.MAX_SAFE_INTEGER ? ` of at least ${min}` : ` from ${min} to ${max}`}`, defaultHint(fallback));
    return fallback;
  }
  const value = Number(raw.trim());
  if (value < min || value > max) {
    problem(env, name, `must be between ${min} and ${max}`, defaultHint(fallback));
    return fallback;
  }
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  problem(env, name, 'must be true or false', defaultHint(fallback));
  return fallback;
}

function callingCodes(env: Env, name: string): string[] | null {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return null;
  const parsed = parseCallingCodes(raw);
  if (parsed.ok) return parsed.codes;
  problem(env, name, `must be comma-separated country calling codes: ${parsed.reason}`, 'For example 44,33, or unset it to allow every country');
  return null;
}

function url(env: Env, name: string, fallback: string | null, protocols: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    problem(env, name, `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`, defaultHint(fallback));
    return fallback;
  }
  if (!protocols.includes(parsed.protocol)) {
    problem(env, name, `must use ${protocols.join(' or ')}, not ${parsed.protocol}`, defaultHint(fallback));
    return fallback;
  }
  return raw;
}

/** One of a fixed list of words. */
function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  problem(env, name, `must be one of ${allowed.join(', ')}`, `Use one of those, or unset it for the default (${fallback})`);
  return fallback;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** An IP address or a host name (letters, digits, hyphens and dots): what `listen` accepts. */
function host(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const bare = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  if (isIP(bare) || /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(bare)) return bare;
  problem(env, name, 'must be an IP address or a host name of this machine (no scheme, port or path)', `For example ${fallback} (this machine only) or 0.0.0.0 (every interface)`);
  return fallback;
}

/**
 * BACKUP_INTERVAL_HOURS turns scheduled backups on; they need BACKUP_DIR and a SQLite store.
 * Asking for them where they cannot run is a mistake to report, not a setting to ignore: the
 * operator would believe there are backups.
 */
function backupSchedule(env: Env, databaseUrl: string): Config['backup'] {
  const intervalHours = int(env, 'BACKUP_INTERVAL_HOURS', 0, 0, 24 * 366);
  const keep = int(env, 'BACKUP_KEEP', 7, 1, 100_000);
  const dir = env.BACKUP_DIR?.trim() || null;
  if (intervalHours === 0) {
    if (dir) problem(env, 'BACKUP_DIR', 'is set but BACKUP_INTERVAL_HOURS is not, so no backup would be taken', 'Set BACKUP_INTERVAL_HOURS (24 for a daily backup), or unset BACKUP_DIR');
    return null;
  }
  if (!dir) {
    problem(env, 'BACKUP_INTERVAL_HOURS', 'needs BACKUP_DIR, the folder to write the backups to', 'Set BACKUP_DIR to a folder, ideally on another disk, or unset BACKUP_INTERVAL_HOURS');
    return null;
  }
  if (!databaseUrl.startsWith('sqlite:') || databaseUrl === 'sqlite::memory:') {
    problem(env, 'BACKUP_INTERVAL_HOURS', 'schedules backups of a SQLite file; DATABASE_URL is not one', 'Back PostgreSQL up with pg_dump (docs/deployment.md, "Backups"), and unset BACKUP_INTERVAL_HOURS and BACKUP_DIR');
    return null;
  }
  return { dir, intervalHours, keep };
}

/** The TLS listener needs its port, certificate and key together; any of them alone is a mistake. */
function smppTls(env: Env): Config['smppServer']['tls'] {
  const port = int(env, 'SMPP_SERVER_TLS_PORT', 0, 0, 65535);
  const certFile = env.SMPP_SERVER_TLS_CERT?.trim() ?? '';
  const keyFile = env.SMPP_SERVER_TLS_KEY?.trim() ?? '';
  if (port === 0 && certFile === '' && keyFile === '') return null;
  const hint = 'Set SMPP_SERVER_TLS_PORT (e.g. 3550), SMPP_SERVER_TLS_CERT and SMPP_SERVER_TLS_KEY (PEM files) together, or none of them';
  if (port === 0) problem(env, 'SMPP_SERVER_TLS_PORT', 'is needed with SMPP_SERVER_TLS_CERT and SMPP_SERVER_TLS_KEY', hint);
  else if (certFile === '') problem(env, 'SMPP_SERVER_TLS_CERT', 'is needed for the TLS listener', hint);
  else if (keyFile === '') problem(env, 'SMPP_SERVER_TLS_KEY', 'is needed for the TLS listener', hint);
  else return { port, certFile, keyFile };
  return null;
}

export function loadConfig(env: Env = process.env): Config {
  const outer = collecting;
  const problems: ConfigProblem[] = [];
  collecting = problems;
  try {
    const config = readConfig(env);
    if (problems.length > 0) {
      const count = problems.length === 1 ? 'a problem' : `${problems.length} problems`;
      throw new ConfigError(`The configuration has ${count}:\n${problems.map((p) => `  ${describeProblem(p)}`).join('\n')}`, problems);
    }
    return config;
  } finally {
    collecting = outer;
  }
}

function readConfig(env: Env): Config {
  const carrier = oneOf(env, 'CARRIER', 'simulator', ['simulator', 'smpp']);
  const databaseUrl = env.DATABASE_URL?.trim() || 'sqlite:./data/pigeon.db';
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    problem(env, 'DATABASE_URL', 'must start with sqlite: (a file) or postgres:// (a server)', 'For example sqlite:./data/pigeon.db or postgres://user:password@127.0.0.1:5432/pigeon');
  } else if (databaseUrl === 'sqlite:') {
    problem(env, 'DATABASE_URL', 'names no SQLite file', 'For example sqlite:./data/pigeon.db');
  }
  const delaysRaw = env.WEBHOOK_RETRY_DELAYS_MS?.trim() || '0,30000,300000';
  let retryDelaysMs = delaysRaw.split(',').map((part) => Number(part.trim()));
  if (!delaysRaw.split(',').every((part) => /^\d+$/.test(part.trim()))) {
    problem(env, 'WEBHOOK_RETRY_DELAYS_MS', 'must be comma-separated milliseconds, one per attempt', defaultHint('0,30000,300000'));
    retryDelaysMs = [0, 30_000, 300_000];
  }
  const port = int(env, 'PORT', 3000, 0, 65535);
  const publicUrl = (url(env, 'PUBLIC_URL', `http://localhost:${port}`, ['http:', 'https:']) as string).replace(/\/+$/, '');
  const logLevel = oneOf(env, 'LOG_LEVEL', 'info', LOG_LEVELS);
  const signupMode = oneOf(env, 'SIGNUP', 'open', ['open', 'verify', 'closed'] as const);
  const backup = backupSchedule(env, databaseUrl);
  return {
    port,
    host: host(env, 'HOST', '127.0.0.1'),
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
      .filter((s) => {
        if (/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(s)) return true;
        problem(env, 'TRUST_PROXY', `${JSON.stringify(s)} is not an IP address or CIDR range`, 'List the addresses of your reverse proxies, comma-separated, e.g. 127.0.0.1,::1');
        return false;
      }),
    redisUrl: url(env, 'REDIS_URL', null, ['redis:', 'rediss:']),
    bulkMaxMessages: int(env, 'BULK_MAX_MESSAGES', 10_000, 1, 1_000_000),
    dispatchBacklogLimit: int(env, 'DISPATCH_BACKLOG_LIMIT', 500_000, 1),
    dispatchBacklogAccountShare: int(env, 'DISPATCH_BACKLOG_ACCOUNT_SHARE', 25, 1, 100),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 5 * 1024 * 1024, 1024),
    webhook: {
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 5000, 1),
      retryDelaysMs,
      allowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    },
    simulator: { deliveryDelayMs: int(env, 'SIM_DELIVERY_DELAY_MS', 1000, 0), logFile: env.SIM_LOG_FILE?.trim() || null },
    smppServer: {
      port: int(env, 'SMPP_SERVER_PORT', 2775, 0, 65535),
      tls: smppTls(env),
      queueHours: int(env, 'SMPP_SERVER_QUEUE_HOURS', 72, 1, 24 * 30),
      bindTimeoutMs: int(env, 'SMPP_SERVER_BIND_TIMEOUT_MS', 30_000, 10),
      enquireLinkMs: int(env, 'SMPP_SERVER_ENQUIRE_LINK_MS', 30_000, 10),
      responseTimeoutMs: int(env, 'SMPP_SERVER_RESPONSE_TIMEOUT_MS', 30_000, 10),
      partsTimeoutMs: int(env, 'SMPP_SERVER_PARTS_TIMEOUT_MS', 60_000, 10),
    },
    smpp: collect(() => loadSmppConfig(env, carrier), { routes: [] } as unknown as SmppConfig),
    smtpUrl: url(env, 'SMTP_URL', null, ['smtp:', 'smtps:']),
    mailFrom: env.MAIL_FROM?.trim() || `Pigeon <no-reply@${new URL(publicUrl).hostname}>`,
    logLevel,
    logFormat: oneOf(env, 'LOG_FORMAT', 'auto', ['auto', 'pretty', 'json']),
    logRequests: bool(env, 'LOG_REQUESTS', true),
    metricsToken: env.METRICS_TOKEN?.trim() || null,
    jobLeaseMs: int(env, 'JOB_LEASE_MS', 60_000, 1000),
    sqliteSynchronous: oneOf(env, 'SQLITE_SYNCHRONOUS', 'normal', ['normal', 'full']),
    reservedSenderNames: (env.RESERVED_SENDER_NAMES ?? '')
      .split(',')
      .map((s) => s.trim().toUpperCase())
      .filter(Boolean),
    signup: { mode: signupMode, maxPerHour: int(env, 'SIGNUP_MAX_PER_HOUR', 5, 1) },
    operatorRequire2fa: bool(env, 'OPERATOR_REQUIRE_2FA', false),
    backup,
    retention: {
      bodyDays: int(env, 'RETENTION_BODY_DAYS', 30, 0, 100_000),
      messageDays: int(env, 'RETENTION_MESSAGE_DAYS', 400, 0, 100_000),
      maskNumbersDays: int(env, 'RETENTION_MASK_NUMBERS_DAYS', 0, 0, 100_000),
      auditDays: int(env, 'RETENTION_AUDIT_DAYS', 730, 1, 100_000),
    },
    links: {
      baseUrl: (url(env, 'LINK_BASE_URL', `${publicUrl}/l`, ['http:', 'https:']) as string).replace(/\/+$/, ''),
      ttlDays: int(env, 'LINK_TTL_DAYS', 90, 1, 100_000),
      fallbackUrl: url(env, 'LINK_FALLBACK_URL', null, ['http:', 'https:']),
      rateLimit: { max: int(env, 'LINK_RATE_LIMIT_MAX', 300, 1), windowMs: int(env, 'LINK_RATE_LIMIT_WINDOW_MS', 60_000, 1000) },
    },
    limits: {
      senderIdPendingMax: int(env, 'SENDER_ID_PENDING_MAX', 20, 0, 1_000_000),
      documentQuotaBytes: int(env, 'DOCUMENT_QUOTA_BYTES', 50 * 1024 * 1024, 0),
      newAccountDailyLimit: int(env, 'NEW_ACCOUNT_DAILY_LIMIT', 1000, 0, 1_000_000_000),
      allowedCountries: callingCodes(env, 'ALLOWED_COUNTRIES'),
    },
  };
}
