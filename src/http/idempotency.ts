/**
 * The HTTP side of `Idempotency-Key` (src/services/messages/idempotency.ts keeps and replays results):
 * a kept result becomes the reply, marked `Idempotent-Replayed: true` when it is a repeat, and a
 * client error is kept as the error body this API answers with.
 */
import type { FastifyReply } from 'fastify';
import { AppError, docsUrl } from '../errors/catalogue.ts';
import { confirmAccess, type Principal } from '../services/auth/access.ts';
import type { Context } from '../services/context.ts';
import { requestHash, withIdempotency, type Finish } from '../services/messages/idempotency.ts';

/** How long a repeat that found the first request still running is told to wait, in seconds. */
const IN_PROGRESS_RETRY_AFTER = '1';

/** The error body kept for a key, the same as the error handler's (src/http/error-handler.ts). */
function keptErrorBody(ctx: Context, err: AppError): Record<string, unknown> {
  return {
    status: 'error',
    code: err.code,
    message: err.message,
    docs_url: docsUrl(ctx.config.publicUrl, err.code),
    ...(err.details ? { details: err.details } : {}),
  };
}

/**
 * Runs a send at most once per `Idempotency-Key` and replies with its result (200 and its body,
 * or the kept answer of the first request). A replay commits nothing, so the key's access is
 * confirmed against the current access revision before it is answered.
 */
export async function replyIdempotently(
  ctx: Context,
  reply: FastifyReply,
  principal: Principal,
  request: { path: string; body: unknown; key: string | undefined },
  send: (finish: Finish | undefined) => Promise<unknown>,
): Promise<FastifyReply> {
  let result;
  try {
    result = await withIdempotency(
      ctx,
      principal.accountId,
      request.key,
      () => requestHash('POST', request.path, request.body),
      async (finish) => ({ status: 200, body: await send(finish) }),
      (err) => ({ status: err.status, body: keptErrorBody(ctx, err) }),
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'idempotency_in_progress' && !err.headers) {
      throw new AppError(err.code, err.message, { headers: { 'Retry-After': IN_PROGRESS_RETRY_AFTER } });
    }
    throw err;
  }
  if (result.replayed) {
    await confirmAccess(ctx, principal);
    reply.header('Idempotent-Replayed', 'true');
  }
  return reply.code(result.status).send(result.body);
}
