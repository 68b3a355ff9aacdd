/**
 * A small browser stand-in for dashboard tests through Fastify inject: it keeps cookies, posts
 * forms with the page's CSRF token, and builds multipart bodies.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createOperator } from '../../src/services/auth/operators.ts';
import type { Context } from '../../src/services/context.ts';
import './hash-cost.ts';

export class DashboardClient {
  readonly cookies = new Map<string, string>();
  /** The Set-Cookie headers of the last response. */
  lastSetCookie: string[] = [];

  constructor(private readonly app: FastifyInstance) {}

  #remember(res: LightMyRequestResponse): void {
    const raw = res.headers['set-cookie'];
    this.lastSetCookie = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    for (const line of this.lastSetCookie) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line) || /expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  #cookieHeader(): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    const res = await this.app.inject({ method: 'GET', url, headers: { ...this.#cookieHeader(), ...headers } });
    this.#remember(res);
    return res;
  }

  /** Posts a urlencoded form; `_csrf` is taken from `csrfFrom` (a page's HTML) unless given. */
  async post(url: string, form: Record<string, string | string[]>, csrfFrom?: string): Promise<LightMyRequestResponse> {
    const params = new URLSearchParams();
    const token = csrfFrom === undefined ? undefined : csrfToken(csrfFrom);
    if (token !== undefined && form._csrf === undefined) params.append('_csrf', token);
    for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
    const res = await this.app.inject({
      method: 'POST',
      url,
      headers: { ...this.#cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: params.toString(),
    });
    this.#remember(res);
    return res;
  }

  async postMultipart(url: string, fieldsIn: Record<string, string>, files: { name: string; filename: string; type: string; bytes: Buffer }[]): Promise<LightMyRequestResponse> {
    const boundary = `----pigeon${Math.random().toString(16).slice(2)}`;
    const chunks: Buffer[] = [];
    for (const [k, v] of Object.entries(fieldsIn)) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
    }
    for (const f of files) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.filename}"\r\nContent-Type: ${f.type}\r\n\r\n`));
      chunks.push(f.bytes, Buffer.from('\r\n'));
    }
    chunks.push(Buffer.from(`--${boundary}--\r\n`));
    const res = await this.app.inject({
      method: 'POST',
      url,
      headers: { ...this.#cookieHeader(), 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: Buffer.concat(chunks),
    });
    this.#remember(res);
    return res;
  }
}

/** The first CSRF hidden field of a page. */
export function csrfToken(page: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1]!;
}

/** A minimal valid PDF, enough for the content sniffing. */
export const TINY_PDF = Buffer.from('%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n');
export const TINY_PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000185d6f5d40000000049454e44ae426082', 'hex');

/** An operator made in `ctx`'s store and signed in to the console of `app`. */
export async function signedInOperator(app: FastifyInstance, ctx: Context, email = 'ops@example.com', role?: 'admin' | 'support' | 'finance'): Promise<DashboardClient> {
  await createOperator(ctx, email, 'operator password', role);
  const ops = new DashboardClient(app);
  const form = await ops.get('/operator/login');
  const res = await ops.post('/operator/login', { email, password: 'operator password' }, form.body);
  if (res.statusCode !== 303) throw new Error(`operator login answered ${res.statusCode}`);
  return ops;
}

/** A person signed up in the dashboard of `app` (a new account, its owner): their signed-in client. */
export async function signedUpOwner(app: FastifyInstance, email: string, password: string, name = 'Acme Ltd'): Promise<DashboardClient> {
  const client = new DashboardClient(app);
  const form = await client.get('/dashboard/signup');
  const res = await client.post('/dashboard/signup', { name, email, password }, form.body);
  if (res.statusCode !== 303) throw new Error(`sign-up answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  return client;
}

/** A dashboard login with an e-mail and a password: the client and the answer, whatever it is. */
export async function dashboardLogIn(app: FastifyInstance, email: string, password: string): Promise<{ client: DashboardClient; res: LightMyRequestResponse }> {
  const client = new DashboardClient(app);
  const form = await client.get('/dashboard/login');
  const res = await client.post('/dashboard/login', { email, password }, form.body);
  return { client, res };
}
