/**
 * Cookies and CSRF for the dashboard. A signed-in person holds a session cookie (HttpOnly,
 * SameSite=Lax, Secure when PUBLIC_URL is https, scoped to its area's path); every form carries
 * the session's CSRF token in a hidden field, and every state-changing request is checked for it
 * before its handler runs, whatever its content type (`checkFormToken`). Forms shown before login
 * (sign-up, login, password reset) use a double-submit token: a random cookie that the hidden
 * field must repeat. Both areas guard their pages with the same `sessionGuard`.
 */
import type { Multipart } from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { createSession, randomToken, resolveSession, sameSecret, SESSION_IDLE_MS, type Session } from '../../services/auth/sessions.ts';
import type { Area } from './layout.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A dashboard route reachable without a session (login, sign-up). */
    public?: boolean;
    /** The two-factor code form: reached only by a session waiting for its code. */
    codeStep?: boolean;
    /** A multipart route's own limits (an upload larger than the dashboard's default). */
    multipartLimits?: { fileSize?: number; fieldSize?: number; fields?: number; files?: number; parts?: number };
  }
  interface FastifyRequest {
    /** A multipart body's parts after the form token, which `checkFormToken` has read. */
    formParts?: AsyncIterableIterator<Multipart>;
  }
}

/** The header the dashboard's script sends the form token in (htmx requests). */
export const CSRF_HEADER = 'x-csrf-token';

export const SESSION_COOKIE: Record<Area, string> = { owner: 'pigeon_session', operator: 'pigeon_operator' };
const COOKIE_PATH: Record<Area, string> = { owner: '/dashboard', operator: '/operator' };
const PRE_LOGIN_COOKIE = 'pigeon_csrf';
const LOGIN_PAGE: Record<Area, string> = { owner: '/dashboard/login', operator: '/operator/login' };
export const CODE_PAGE: Record<Area, string> = { owner: '/dashboard/login/code', operator: '/operator/login/code' };
export const HOME: Record<Area, string> = { owner: '/dashboard', operator: '/operator' };

function cookieOptions(ctx: Context, path: string, maxAgeSeconds: number) {
  return { path, httpOnly: true, sameSite: 'lax' as const, secure: ctx.config.publicUrl.startsWith('https:'), maxAge: maxAgeSeconds };
}

export function setSessionCookie(ctx: Context, reply: FastifyReply, area: Area, token: string): void {
  reply.setCookie(SESSION_COOKIE[area], token, cookieOptions(ctx, COOKIE_PATH[area], SESSION_IDLE_MS / 1000));
}

export function clearSessionCookie(ctx: Context, reply: FastifyReply, area: Area): void {
  reply.clearCookie(SESSION_COOKIE[area], cookieOptions(ctx, COOKIE_PATH[area], 0));
}

/** The double-submit token for a form shown before login; sets its cookie when missing. */
export function preLoginToken(ctx: Context, request: FastifyRequest, reply: FastifyReply): string {
  const existing = request.cookies[PRE_LOGIN_COOKIE];
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
  const token = randomToken();
  reply.setCookie(PRE_LOGIN_COOKIE, token, cookieOptions(ctx, '/', 60 * 60));
  return token;
}

export function checkPreLoginToken(request: FastifyRequest, field: unknown): void {
  if (!sameSecret(request.cookies[PRE_LOGIN_COOKIE], typeof field === 'string' ? field : undefined)) throw new AppError('invalid_csrf_token');
}

export function checkCsrf(expected: string, field: unknown): void {
  if (!sameSecret(expected, typeof field === 'string' ? field : undefined)) throw new AppError('invalid_csrf_token');
}

/**
 * Checks the session's form token on a state-changing request, before anything acts on it: from
 * the `X-CSRF-Token` header when present (another site's form cannot set headers), else from the
 * `_csrf` field, which in a multipart body must be the first part (the hidden field comes first
 * in every form, and browsers send fields in document order). Reading it first means a forged
 * upload is refused before a single file byte is looked at; the handler reads the remaining parts
 * with `formParts`.
 */
export async function checkFormToken(request: FastifyRequest, expected: string): Promise<void> {
  const header = request.headers[CSRF_HEADER];
  if (typeof header === 'string' && header !== '') return checkCsrf(expected, header);
  if (!request.isMultipart()) return checkCsrf(expected, field(request.body, '_csrf'));
  const parts = multipartParts(request);
  let first: IteratorResult<Multipart>;
  try {
    first = await parts.next();
  } catch {
    // A body cut short or with bad part headers: refused as unreadable, as the upload handler does.
    throw new AppError('invalid_request', 'The form could not be read; please try again.');
  }
  const part = first.done ? undefined : first.value;
  if (!part || part.type !== 'field' || part.fieldname !== '_csrf') throw new AppError('invalid_csrf_token');
  checkCsrf(expected, part.value);
  request.formParts = parts;
}

/**
 * The preHandler that guards an area's pages (all but those marked `public`): the cookie must
 * name a live session of the area whose person `load` still finds, else the browser goes to the
 * login page (an htmx request is told so with HX-Redirect, since it would follow a redirect
 * inside the page); then, on a state-changing request, the session's form token is checked.
 * `attach` keeps the session and the person on the request for the handler.
 */
export function sessionGuard<T>(
  ctx: Context,
  area: Area,
  load: (subjectId: string) => Promise<T | null>,
  attach: (request: FastifyRequest, session: Session, subject: T) => void,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config.public) return;
    const session = await resolveSession(ctx, area, request.cookies[SESSION_COOKIE[area]]);
    const subject = session ? await load(session.subject_id) : null;
    if (!session || !subject) {
      if (request.headers['hx-request']) return reply.header('hx-redirect', LOGIN_PAGE[area]).code(401).send('');
      return seeOther(reply, LOGIN_PAGE[area]);
    }
    // A session opened by the password alone reaches only the code form, and the code form only it.
    const codeStep = request.routeOptions.config.codeStep === true;
    if (Boolean(session.pending) !== codeStep) {
      const to = codeStep ? HOME[area] : CODE_PAGE[area];
      if (request.headers['hx-request']) return reply.header('hx-redirect', to).code(401).send('');
      return seeOther(reply, to);
    }
    attach(request, session, subject);
    if (request.method !== 'GET' && request.method !== 'HEAD') await checkFormToken(request, session.csrf_token);
  };
}

/** The parts of a multipart form that `checkFormToken` has not read. */
export function formParts(request: FastifyRequest): AsyncIterableIterator<Multipart> {
  return request.formParts ?? multipartParts(request);
}

function multipartParts(request: FastifyRequest): AsyncIterableIterator<Multipart> {
  const limits = request.routeOptions.config.multipartLimits;
  return limits ? request.parts({ limits }) : request.parts();
}

/** A form body's string field ('' when missing or not a string). */
export function field(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** All values of a repeated form field (checkboxes). */
export function fields(body: unknown, name: string): string[] {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return typeof value === 'string' ? [value] : [];
}

/** Redirects after a successful POST (303: the browser follows with a GET). */
export function seeOther(reply: FastifyReply, url: string): FastifyReply {
  return reply.redirect(url, 303);
}

/**
 * The POST handler of a login form, the same for owners and the operator: check the pre-login
 * token, log in, open a session and go `home`; a wrong password or a lockout shows the form again
 * with the reason (and `Retry-After` for a lockout).
 */
export function loginHandler(
  ctx: Context,
  area: Area,
  logIn: (email: string, password: string, ip: string) => Promise<{ id: string; totp_enabled_at?: number | null }>,
  home: string,
  loginPage: (token: string, error?: string, email?: string) => string,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    checkPreLoginToken(request, field(request.body, '_csrf'));
    const email = field(request.body, 'email');
    try {
      const user = await logIn(email, field(request.body, 'password'), request.ip);
      // With two-factor on, the password opens only a session that waits for the code.
      const needsCode = user.totp_enabled_at != null;
      const { token } = await createSession(ctx, area, user.id, needsCode ? { pending: 'code' } : {});
      setSessionCookie(ctx, reply, area, token);
      return seeOther(reply, needsCode ? CODE_PAGE[area] : home);
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_credentials', 'login_locked', 'service_unavailable'].includes(err.code)) throw err;
      if (err.headers) reply.headers(err.headers);
      return reply.code(err.status).type('text/html; charset=utf-8').send(loginPage(preLoginToken(ctx, request, reply), err.message, email));
    }
  };
}
