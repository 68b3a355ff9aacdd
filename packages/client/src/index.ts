/**
 * `@pigeon-sms/client`: a typed client for the Pigeon SMS API, with no dependencies beyond the
 * runtime's `fetch` and Web Crypto.
 *
 * ```ts
 * const pigeon = new Pigeon({ apiKey: process.env.PIGEON_KEY!, baseUrl: 'https://sms.example.com' });
 * await pigeon.sms.send({ to: '+14155552671', from: 'Acme', message: 'Hello' });
 * ```
 */
export { Pigeon, type CallOptions, type SendOptions } from './client.ts';
export type { ClientOptions } from './transport.ts';
export { verifyAccountEvent, verifyWebhook, type HeaderSource, type VerifyOptions } from './webhook.ts';
export {
  KNOWN_ERROR_CODES,
  PigeonApiError,
  PigeonAuthenticationError,
  PigeonConnectionError,
  PigeonError,
  PigeonInvalidRequestError,
  PigeonPermissionError,
  PigeonRateLimitError,
  PigeonServerError,
  PigeonWebhookError,
  type ErrorDetail,
  type KnownErrorCode,
  type PigeonErrorCode,
} from './errors.ts';
export type * from './types.ts';
