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

/**
 * One detail per field, in plain words. Ajv reports a union of literals (an enum such as
 * `status`) as one "must be equal to constant" per branch plus "must match a schema in anyOf";
 * those become a single "must be one of: …" naming the allowed values.
 */
function validationDetails(error: FastifyError): ErrorDetail[] {
  const context = (error as FastifyError & { validationContext?: string }).validationContext ?? 'body';
  const byField = new Map<string, AjvError[]>();
  for (const e of (error.validation ?? []) as AjvError[]) {
    const field = fieldName(context, e);
    byField.set(field, [...(byField.get(field) ?? []), e]);
  }
  return [...byField].slice(0, 20).map(([field, errors]) => ({ field, code: 'invalid_request', message: describe(errors) }));
}

function describe(errors: AjvError[]): string {
  const allowed: unknown[] = [];
  for (const e of errors) {
    if (e.keyword === 'const') allowed.push(e.params?.allowedValue);
    if (e.keyword === 'enum' && Array.isArray(e.params?.allowedValues)) allowed.push(...e.params.allowedValues);
  }
  if (allowed.length > 0) return `must be one of: ${[...new Set(allowed)].map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
  const first = errors.find((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf') ?? errors[0];
  if (first?.keyword === 'required') return 'is required';
  const limit = first?.params?.limit;
  switch (first?.keyword) {
    case 'maximum':
      return `must be at most ${String(limit)}`;
    case 'minimum':
      return `must be at least ${String(limit)}`;
    case 'maxLength':
      return `must be at most ${String(limit)} characters`;
    case 'minLength':
      return `must be at least ${String(limit)} characters`;
    case 'maxItems':
      return `must have at most ${String(limit)} entries`;
    default:
      return first?.message ?? 'is invalid';
  }
}

function tooLarge(bodyLimit: number | undefined): string | undefined {
  if (!bodyLimit) return undefined;
  const mib = bodyLimit / (1024 * 1024);
  const size = Number.isInteger(mib) ? `${mib} MiB (${bodyLimit.toLocaleString('en')} bytes)` : `${bodyLimit.toLocaleString('en')} bytes`;
  return `The request body is larger than the limit of ${size}; split a large bulk send into several requests.`;
}

function classify(error: FastifyError, bodyLimit?: number): { code: ErrorCode; message?: string; details?: ErrorDetail[] } {
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
      return { code: 'payload_too_large', message: tooLarge(bodyLimit) };
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
  if (error.statusCode === 413) return { code: 'payload_too_large', message: tooLarge(bodyLimit) };
  if (error.statusCode === 415) return { code: 'unsupported_media_type' };
  return { code: 'internal_error' };
}

/**
 * `unavailable` turns an error of a store that cannot take work (PostgreSQL restarting, a full
 * disk) into its catalogued 503, so that a client gets a retryable answer rather than a 500.
 */
export function makeErrorHandler(publicUrl: string, bodyLimit?: number, unavailable: (error: unknown) => AppError | null = () => null) {
  return function errorHandler(raw: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) {
    const error = unavailable(raw) ?? raw;
    if (error instanceof AppError) {
      if (error.headers) reply.headers(error.headers);
      return reply.code(error.status).send(errorBody(publicUrl, error.code, error.message, error.details));
    }
    const { code, message, details } = classify(error as FastifyError, bodyLimit);
    if (code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
    return reply.code(catalogue[code].status).send(errorBody(publicUrl, code, message, details));
  };
}
