/**
 * Cookies and CSRF for the dashboard. A signed-in person holds a session cookie (HttpOnly,
 * SameSite=Lax, Secure when PUBLIC_URL is https, scoped to its area's path); every form carries
 * the session's CSRF token in a hidden field. Forms shown before login (sign-up, login) use a
 * double-submit token: a random cookie that the hidden field must repeat.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import type { Context } from '../../services/context.ts';
import { createSession, randomToken, sameSecret, SESSION_IDLE_MS } from '../../services/sessions.ts';
import type { Area } from './layout.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A dashboard route reachable without a session (login, sign-up). */
    public?: boolean;
  }
}

export const SESSION_COOKIE: Record<Area, string> = { owner: 'pigeon_session', operator: 'pigeon_operator' };
const COOKIE_PATH: Record<Area, string> = { owner: '/dashboard', operator: '/operator' };
const PRE_LOGIN_COOKIE = 'pigeon_csrf';

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
  logIn: (email: string, password: string, ip: string) => Promise<{ id: string }>,
  home: string,
  loginPage: (token: string, error?: string, email?: string) => string,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    checkPreLoginToken(request, field(request.body, '_csrf'));
    const email = field(request.body, 'email');
    try {
      const user = await logIn(email, field(request.body, 'password'), request.ip);
      const { token } = await createSession(ctx, area, user.id);
      setSessionCookie(ctx, reply, area, token);
      return seeOther(reply, home);
    } catch (err) {
      if (!(err instanceof AppError) || !['invalid_credentials', 'login_locked'].includes(err.code)) throw err;
      if (err.headers) reply.headers(err.headers);
      return reply.code(err.status).type('text/html; charset=utf-8').send(loginPage(preLoginToken(ctx, request, reply), err.message, email));
    }
  };
}
