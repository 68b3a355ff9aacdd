/**
 * Turns every failure into the one error body of the spec:
 * `{ status: 'error', code, message, docs_url, details? }`, with the status from the catalogue.
 * Fastify's own errors (bad JSON, body too large, wrong media type, schema validation) are mapped
 * to catalogue codes here; anything unexpected is a 500 `internal_error` with no internals shown.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, catalogue, docsUrl, type ErrorCode, type ErrorDetail } from '../errors/catalogue.ts';

export function errorBody(publicUrl: string, code: ErrorCode, message?: string, details?: ErrorDetail[]) {
  const body: Record<string, unknown> = {
    status: 'error',
    code,
    message: message ?? catalogue[code].message,
    docs_url: docsUrl(publicUrl, code),
  };
  if (details && details.length > 0) body.details = details;
  return body;
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** `/messages/3/to` becomes `messages[3].to`, the form clients write in code. */
function fieldName(prefix: string, error: AjvError): string {
  const parts = (error.instancePath ?? '').split('/').filter(Boolean);
  if (error.keyword === 'required' && typeof error.params?.missingProperty === 'string') parts.push(error.params.missingProperty);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || prefix;
}

function validationDetails(error: FastifyError): ErrorDetail[] {
  const context = (error as FastifyError & { validationContext?: string }).validationContext ?? 'body';
  return ((error.validation ?? []) as AjvError[]).slice(0, 20).map((e) => ({
    field: fieldName(context, e),
    code: 'invalid_request',
    message: e.message ?? 'is invalid',
  }));
}

function classify(error: FastifyError): { code: ErrorCode; message?: string; details?: ErrorDetail[] } {
  if (error.validation) {
    const details = validationDetails(error);
    const summary = details.map((d) => `${d.field} ${d.message}`).join('; ');
    return { code: 'invalid_request', message: `The request is invalid: ${summary}.`, details };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { code: 'invalid_request', message: 'The body is not valid JSON.' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'invalid_request', message: 'The body is empty; send a JSON object.' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'payload_too_large' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'invalid_request', message: 'The Content-Length does not match the body.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return { code: 'unsupported_media_type' };
    default:
      break;
  }
  // Errors from body parsing that Fastify tags with a 4xx status (e.g. a bad charset).
  if (error.statusCode === 400) return { code: 'invalid_request', message: 'The request could not be read.' };
  // @fastify/static refuses a path that climbs out of its folder (`%2e%2e/`) with 403: to the
  // caller, that file simply does not exist.
  if (error.statusCode === 403 || error.statusCode === 404) return { code: 'not_found', message: 'No such file.' };
  if (error.statusCode === 413) return { code: 'payload_too_large' };
  if (error.statusCode === 415) return { code: 'unsupported_media_type' };
  return { code: 'internal_error' };
}

export function makeErrorHandler(publicUrl: string) {
  return function errorHandler(error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) {
    if (error instanceof AppError) {
      if (error.headers) reply.headers(error.headers);
      return reply.code(error.status).send(errorBody(publicUrl, error.code, error.message, error.details));
    }
    const { code, message, details } = classify(error as FastifyError);
    if (code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
    return reply.code(catalogue[code].status).send(errorBody(publicUrl, code, message, details));
  };
}
