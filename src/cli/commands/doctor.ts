/**
 * `pigeon doctor`: checks what a running Pigeon depends on, with the same configuration the
 * server would read, and says what is wrong. It never creates or migrates the database.
 */
import pino from 'pino';
import { ConfigError, loadConfig, maskUrlPassword, type Config } from '../../config/config.ts';
import { checkDatabaseLocation, startupProblems } from '../../config/startup-checks.ts';
import { createCarrier } from '../../carriers/create-carrier.ts';
import { probeDatabase, type DatabaseProbe } from '../../services/database.ts';
import { systemClock } from '../../util/ids.ts';
import type { Command } from '../command.ts';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** Works, but is worth changing (printed WARN): it does not make the doctor fail. */
  warning?: true;
}

const TIMEOUT_MS = 5000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
    }),
  ]);
}

function explain(err: unknown, config: Config): string {
  const problem = startupProblems(err, config)?.[0];
  if (problem) return `${problem.message}. ${problem.hint}`;
  return maskUrlPassword((err as Error)?.message ?? String(err));
}

async function checkDatabase(config: Config): Promise<{ checks: Check[]; store: DatabaseProbe | null }> {
  const where = maskUrlPassword(config.databaseUrl);
  try {
    checkDatabaseLocation(config.databaseUrl, false);
  } catch (err) {
    return { checks: [{ name: 'database', ok: false, detail: explain(err, config) }], store: null };
  }
  const store = probeDatabase(config.databaseUrl);
  try {
    await withTimeout(store.ping(), TIMEOUT_MS, 'the database');
  } catch (err) {
    await store.close().catch(() => {});
    return { checks: [{ name: 'database', ok: false, detail: `${where}: ${explain(err, config)}` }], store: null };
  }
  return { checks: [{ name: 'database', ok: true, detail: `${where} (${store.dialect}) answers` }], store };
}

async function checkMigrations(store: DatabaseProbe): Promise<Check> {
  try {
    return (await store.migrationsCurrent())
      ? { name: 'migrations', ok: true, detail: 'every migration is applied' }
      : { name: 'migrations', ok: false, detail: 'migrations are pending: run `pigeon migrate` (or start `pigeon serve`, which applies them)' };
  } catch (err) {
    return { name: 'migrations', ok: false, detail: (err as Error).message };
  }
}

async function checkCarrier(config: Config, routesFrom: string): Promise<Check> {
  if (config.carrier === 'simulator') {
    return { name: 'carrier', ok: true, detail: 'simulator: messages are delivered by the built-in simulator, not to phones (CARRIER=smpp for a real SMSC)' };
  }
  const carrier = createCarrier(config, systemClock, pino({ level: 'silent' }));
  carrier.start?.();
  try {
    const deadline = Date.now() + TIMEOUT_MS;
    let status = carrier.status();
    while (!status.ready && !status.failed && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = carrier.status();
    }
    return status.ready
      ? { name: 'carrier', ok: true, detail: status.detail }
      : { name: 'carrier', ok: false, detail: `${status.detail}: check ${routesFrom}` };
  } finally {
    await carrier.close();
  }
}

async function checkSmtp(config: Config): Promise<Check> {
  if (!config.smtpUrl) {
    return { name: 'smtp', ok: true, detail: 'SMTP_URL is not set: mail is held in the operator dashboard\'s outbox, not sent' };
  }
  const where = maskUrlPassword(config.smtpUrl);
  const nodemailer = (await import('nodemailer')).default;
  const transport = nodemailer.createTransport(config.smtpUrl);
  try {
    await withTimeout(transport.verify(), TIMEOUT_MS, 'the SMTP server');
    return { name: 'smtp', ok: true, detail: `${where} accepts connections and the login` };
  } catch (err) {
    return { name: 'smtp', ok: false, detail: `${where}: ${maskUrlPassword((err as Error).message)}: check SMTP_URL` };
  } finally {
    transport.close();
  }
}

async function checkPublicUrl(config: Config): Promise<Check> {
  const url = new URL(config.publicUrl);
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (local && port !== config.port) {
    return { name: 'public_url', ok: false, detail: `PUBLIC_URL ${config.publicUrl} points at port ${port} on this machine, but PORT is ${config.port}: links in errors, mail and the dashboard would be wrong` };
  }
  try {
    const res = await withTimeout(fetch(`${config.publicUrl}/health`, { redirect: 'manual' }), TIMEOUT_MS, config.publicUrl);
    if (res.ok) return { name: 'public_url', ok: true, detail: `${config.publicUrl}/health answers` };
    return { name: 'public_url', ok: false, detail: `${config.publicUrl}/health answered HTTP ${res.status}: is PUBLIC_URL this Pigeon's address?` };
  } catch (err) {
    const cause = ((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message) || 'no answer';
    return { name: 'public_url', ok: false, detail: `${config.publicUrl} does not answer (${cause}): start \`pigeon serve\`, or set PUBLIC_URL to the address people reach it at` };
  }
}

/** enquire_link, sequence 1: the smallest question an SMPP listener must answer, bound or not. */
const ENQUIRE_LINK = Buffer.from('00000010000000150000000000000001', 'hex');

/** Whether the SMPP listener customers bind to (SMPP_SERVER_PORT) answers enquire_link. */
async function checkSmppServer(config: Config): Promise<Check> {
  const port = config.smppServer.port;
  if (port === 0) return { name: 'smpp_server', ok: true, detail: 'SMPP_SERVER_PORT is 0: customers cannot bind over SMPP' };
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '::1' : config.host;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const { connect } = await import('node:net');
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        const socket = connect({ host, port });
        let got = Buffer.alloc(0);
        socket.on('connect', () => socket.write(ENQUIRE_LINK));
        socket.on('data', (chunk: Buffer) => {
          got = Buffer.concat([got, chunk]);
          if (got.length < 16) return;
          socket.destroy();
          if (got.readUInt32BE(4) === 0x80000015) resolve();
          else reject(new Error('it answered, but not as an SMPP listener'));
        });
        socket.on('error', (err) => reject(err));
        socket.on('close', () => reject(new Error('it closed the connection')));
      }),
      TIMEOUT_MS,
      where,
    );
    return { name: 'smpp_server', ok: true, detail: `${where} answers enquire_link: customers bind there with \`pigeon smpp-user create\` credentials` };
  } catch (err) {
    const cause = ((err as { code?: string }).code ?? (err as Error).message) || 'no answer';
    return { name: 'smpp_server', ok: false, detail: `the SMPP listener at ${where} does not answer (${cause}): start \`pigeon serve\`, or set SMPP_SERVER_PORT=0 to turn it off` };
  }
}

/** Whether operators must sign in with two-factor (DECISIONS.md §15): off is a warning, not a failure. */
export function checkOperatorTwoFactor(config: Pick<Config, 'operatorRequire2fa'>): Check {
  return config.operatorRequire2fa
    ? { name: 'operator_2fa', ok: true, detail: 'OPERATOR_REQUIRE_2FA=true: every operator signs in to the console with two-factor' }
    : {
        name: 'operator_2fa',
        ok: true,
        warning: true,
        detail: 'OPERATOR_REQUIRE_2FA is off: an operator can sign in to the console, which moves money and prices, with a password alone; set OPERATOR_REQUIRE_2FA=true',
      };
}

export async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<Check[]> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return [{ name: 'configuration', ok: false, detail: err.problems.map((p) => `${p.variable}: ${p.message}`).join('; ') }];
  }
  const checks: Check[] = [{ name: 'configuration', ok: true, detail: 'every variable is valid' }];
  const database = await checkDatabase(config);
  checks.push(...database.checks);
  let routesFrom = 'SMPP_HOST, SMPP_PORT, SMPP_SYSTEM_ID and SMPP_PASSWORD (or SMPP_ROUTES)';
  if (database.store) {
    const migrations = await checkMigrations(database.store);
    checks.push(migrations);
    // Workers bind to the routes table once it has rows; the variables only fill an empty one.
    if (config.carrier === 'smpp' && migrations.ok) {
      const routes = await database.store.smppRoutes().catch(() => []);
      if (routes.length > 0) {
        config = { ...config, smpp: { ...config.smpp, routes } };
        routesFrom = 'the routes (pigeon route list, pigeon route update)';
      }
    }
    await database.store.close();
  } else {
    checks.push({ name: 'migrations', ok: false, detail: 'not checked: no database' });
  }
  checks.push(await checkCarrier(config, routesFrom), await checkSmtp(config), await checkPublicUrl(config), await checkSmppServer(config), checkOperatorTwoFactor(config));
  return checks;
}

export const doctorCommands: Record<string, Command> = {
  doctor: {
    usage: 'doctor',
    description:
      'Check the configuration, the database and its migrations, the carrier link (an SMPP bind when CARRIER=smpp), SMTP, PUBLIC_URL, the SMPP listener customers bind to (SMPP_SERVER_PORT) and whether operators must use two-factor (OPERATOR_REQUIRE_2FA), and say what is wrong.\n\n' +
      'Exit code 1 when any check fails; a warning (WARN) does not fail. With --json: {"ok":bool,"checks":[{"name","ok","detail","warning"?}]}.',
    standalone: true,
    async run(_ctx, _args, out) {
      const checks = await runDoctor();
      const ok = checks.every((c) => c.ok);
      const warned = checks.some((c) => c.warning);
      const verdict = !ok ? 'Something needs fixing (FAIL above).' : warned ? 'Everything checked works; consider the warnings (WARN above).' : 'Everything checked is fine.';
      out.print({ ok, checks }, [...checks.map((c) => `${!c.ok ? 'FAIL' : c.warning ? 'WARN' : 'ok  '}  ${c.name}: ${c.detail}`), '', verdict].join('\n'));
      process.exitCode = ok ? 0 : 1;
    },
  },
};
