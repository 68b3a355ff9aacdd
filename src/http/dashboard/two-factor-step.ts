/**
 * What the dashboard's and the operator console's two-factor pages share: the answer to a wrong
 * or locked-out code, and the sign-in's code step, which turns the session waiting for its code
 * into a new, signed-in one.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors/catalogue.ts';
import type { Session } from '../../services/auth/sessions.ts';
import { createSession, endSession } from '../../services/auth/sessions.ts';
import { verifySignInCode, type TwoFactorPerson } from '../../services/auth/two-factor.ts';
import type { Context } from '../../services/context.ts';
import { acting } from '../acting.ts';
import { field, HOME, seeOther, setSessionCookie } from './session-guard.ts';

const CODE_ERRORS = ['invalid_request', 'invalid_credentials', 'login_locked'];

/**
 * A refused code (wrong, already used, locked out, or the wrong moment): its status and headers
 * (Retry-After) go on the reply and its message is returned for the page. Anything else is thrown on.
 */
export function codeRefusal(err: unknown, reply: FastifyReply): string {
  if (!(err instanceof AppError) || !CODE_ERRORS.includes(err.code)) throw err;
  if (err.headers) reply.headers(err.headers);
  reply.code(err.status);
  return err.message;
}

/**
 * The POST of the sign-in's code step: a valid code (or recovery code) ends the waiting session
 * and signs the person in with a new one; a refused code shows `codePage` again with the reason.
 */
export async function completeCodeStep(ctx: Context, request: FastifyRequest, reply: FastifyReply, person: TwoFactorPerson, session: Session, codePage: (error: string) => string): Promise<FastifyReply> {
  try {
    await verifySignInCode(acting(ctx, request), person, field(request.body, 'code'), request.ip);
  } catch (err) {
    return reply.type('text/html; charset=utf-8').send(codePage(codeRefusal(err, reply)));
  }
  // A new session (and cookie) for the signed-in person: the waiting one is not promoted.
  await endSession(ctx, session.id);
  const { token } = await createSession(ctx, person.kind, person.id);
  setSessionCookie(ctx, reply, person.kind, token);
  return seeOther(reply, HOME[person.kind]);
}
