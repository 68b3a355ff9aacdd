/**
 * Password hashing with scrypt at OWASP's recommended cost (N=2^17, r=8, p=1). The stored form
 * names its parameters (`scrypt$N$r$p$salt$hash`), so the cost can be raised later without
 * breaking existing hashes.
 *
 * Each scrypt holds 128 MiB while it runs, so hashes run in a bounded pool shared by sign-ups,
 * logins and password changes: one per core at a time and at most 64 waiting; beyond that the
 * request is refused at once with 503 `service_unavailable` and Retry-After. Without the bound,
 * forty parallel sign-ups hold five gigabytes' worth of scrypt work and the process's memory
 * climbs with every one that the thread pool starts.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { AppError } from '../../errors/catalogue.ts';
import { Slots } from '../../util/slots.ts';

/**
 * scrypt's cost for new hashes; a check reads the cost from the stored hash. Test processes lower
 * it where hashing is not what they test (test/helpers/hash-cost.ts): at this cost a sign-up takes
 * 0.3-0.6 s of CPU, and the suite signs up some 250 times on each database.
 */
export const hashCost = { N: 2 ** 17 };
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

/** Seconds a refused request is told to wait: a queue of 64 drains in a few seconds. */
const RETRY_AFTER_SECONDS = 5;

/** The process's pool; its limits may be changed (tests make it small to reach the bound). */
export const hashPool = new Slots(
  availableParallelism(),
  64,
  () =>
    new AppError('service_unavailable', 'The server is busy checking passwords; try again in a few seconds.', {
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    }),
);

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return hashPool.run(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { N: n, r, p, maxmem: 256 * n * r }, (err, key) => (err ? reject(err) : resolve(key)));
      }),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { N } = hashCost;
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}
