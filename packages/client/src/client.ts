/**
 * The client: one typed method per endpoint, grouped by resource
 * (`pigeon.sms.send`, `pigeon.deliveryReports.iterate`, …).
 */
import { PigeonApiError } from './errors.ts';
import { Transport, type ClientOptions, type RawResponse } from './transport.ts';
import type {
  AuditEvent,
  AuditEventPage,
  AuditEventQuery,
  AccountResult,
  PricingResult,
  QuoteResult,
  BulkRequest,
  BulkResult,
  CancelResult,
  DeliveryReport,
  DeliveryReportPage,
  LinkPage,
  LinkQuery,
  DeliveryReportQuery,
  SendRequest,
  SendResult,
  SenderId,
  SenderIdCreated,
  SenderIdList,
  WebhookEventAccepted,
  WebhookEventPage,
  WebhookEventQuery,
  WebhookEventRecord,
  EventsUrlResult,
  QuietHours,
  QuietHoursResult,
  InboundCreated,
  InboundMessage,
  InboundPage,
  InboundQuery,
  NumberList,
  OptOutPage,
  OptOutQuery,
  OptOutResult,
  Pagination,
  SimulatedInbound,
  SafeListEntry,
  Success,
  Verification,
  VerificationCheck,
  VerificationCheckRequest,
  VerifyBlock,
  VerifyService,
  VerifyServiceChanges,
  VerifyServiceRequest,
} from './types.ts';

export interface CallOptions {
  signal?: AbortSignal;
}

export interface SendOptions extends CallOptions {
  /**
   * Identifies this send for 24 hours so that repeating it never sends twice. Default: a new
   * random key per call, reused by the client's own retries of that call.
   */
  idempotencyKey?: string;
}

/** The answer's body, or a typed error when it is not the JSON object the API documents. */
function object(response: RawResponse): Record<string, unknown> {
  if (typeof response.body !== 'object' || response.body === null) {
    throw new PigeonApiError({ status: response.status, code: 'invalid_response', message: 'The answer is not a JSON object.', docs_url: '', headers: response.headers });
  }
  return response.body as Record<string, unknown>;
}

/**
 * Every method returns the answer's whole JSON body (`status: "success"` and the rest), typed:
 * never a part of it. Only `deliveryReports.iterate` yields single reports.
 */

/** Accepts both documented shapes of Sender ID answers: `data` (reference) and `sender_ids` / `sender_id` (guide). */
export function senderIdsFrom(body: Record<string, unknown>): SenderId[] {
  const list = body.data ?? body.sender_ids;
  return Array.isArray(list) ? (list as SenderId[]) : [];
}

export function senderIdFrom(body: Record<string, unknown>): SenderId {
  return (body.data ?? body.sender_id) as SenderId;
}

/**
 * Every entry `list` gives for `query`, page after page from `query.page` (default 1), each page
 * fetched when the loop asks for it; it ends at an empty page or the last one.
 */
function everyPage<Q extends { page?: number }, T>(
  list: (query: Q, options: CallOptions) => Promise<{ data: T[]; pagination: Pagination }>,
  query: Q,
  options: CallOptions,
): AsyncIterableIterator<T> {
  return (async function* pages() {
    let page = query.page ?? 1;
    for (;;) {
      const result = await list({ ...query, page }, options);
      yield* result.data;
      const { limit, total } = result.pagination;
      if (result.data.length === 0 || page * limit >= total) return;
      page++;
    }
  })();
}

function newIdempotencyKey(): string {
  return crypto.randomUUID();
}

export class Pigeon {
  readonly #http: Transport;

  constructor(options: ClientOptions) {
    this.#http = new Transport(options);
  }

  /** Sending. */
  readonly sms = {
    /** `POST /v1/sms/send`: one SMS. Retried safely: every call carries an Idempotency-Key. */
    send: async (request: SendRequest, options: SendOptions = {}): Promise<SendResult> => {
      const response = await this.#http.request({
        method: 'POST',
        path: '/sms/send',
        body: request,
        idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
        signal: options.signal,
      });
      return object(response) as unknown as SendResult;
    },
    /**
     * `POST /v1/sms/quote`: the cost of `request` as a send (segments, the destination's price),
     * refused as the send would be. Nothing is stored or debited, so it is safe to repeat.
     */
    quote: async (request: SendRequest, options: CallOptions = {}): Promise<QuoteResult> => {
      const response = await this.#http.request({ method: 'POST', path: '/sms/quote', body: request, signal: options.signal });
      return object(response) as unknown as QuoteResult;
    },
    /** `POST /v1/sms/bulk`: a campaign of up to 10,000 messages; invalid entries come back in `errors`. */
    bulk: async (request: BulkRequest, options: SendOptions = {}): Promise<BulkResult> => {
      const response = await this.#http.request({
        method: 'POST',
        path: '/sms/bulk',
        body: request,
        idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
        signal: options.signal,
      });
      return object(response) as unknown as BulkResult;
    },
    /**
     * `POST /v1/sms/{id}/cancel`: cancels a message still `scheduled` and refunds it. Not retried
     * after a network error: a repeat of a cancel that did happen answers `not_cancelable`.
     */
    cancel: async (messageId: string, options: CallOptions = {}): Promise<CancelResult> => {
      const response = await this.#http.request({ method: 'POST', path: `/sms/${encodeURIComponent(messageId)}/cancel`, signal: options.signal });
      return object(response) as unknown as CancelResult;
    },
    /** `GET /v1/sms/links`: one page of the tracked links of a message or a batch, with their clicks. */
    links: async (query: LinkQuery, options: CallOptions = {}): Promise<LinkPage> => {
      const response = await this.#http.request({ method: 'GET', path: '/sms/links', query: { ...query }, signal: options.signal });
      return object(response) as unknown as LinkPage;
    },
    /** `POST /v1/sms/batches/{batch_id}/cancel`: cancels what is still `scheduled` of a batch, in one refund. */
    cancelBatch: async (batchId: string, options: CallOptions = {}): Promise<CancelResult> => {
      const response = await this.#http.request({ method: 'POST', path: `/sms/batches/${encodeURIComponent(batchId)}/cancel`, signal: options.signal });
      return object(response) as unknown as CancelResult;
    },
  };

  /** Sender IDs. */
  readonly senderIds = {
    /** `GET /v1/sms/sender-ids`, newest first. */
    list: async (options: CallOptions = {}): Promise<SenderIdList> => {
      const response = await this.#http.request({ method: 'GET', path: '/sms/sender-ids', signal: options.signal });
      return { status: 'success', data: senderIdsFrom(object(response)) };
    },
    /**
     * `POST /v1/sms/sender-ids`: registers a name for review; it starts `pending`. Not retried
     * after a network error (the endpoint takes no Idempotency-Key); a repeat would be
     * `sender_id_exists`.
     */
    create: async (name: string, options: CallOptions = {}): Promise<SenderIdCreated> => {
      const response = await this.#http.request({ method: 'POST', path: '/sms/sender-ids', body: { name }, signal: options.signal });
      return { status: 'success', data: senderIdFrom(object(response)) };
    },
  };

  /** Delivery reports. */
  readonly deliveryReports = {
    /** `GET /v1/sms/delivery-reports`: one page. */
    list: async (query: DeliveryReportQuery = {}, options: CallOptions = {}): Promise<DeliveryReportPage> => {
      const response = await this.#http.request({ method: 'GET', path: '/sms/delivery-reports', query: { ...query }, signal: options.signal });
      return object(response) as unknown as DeliveryReportPage;
    },
    /**
     * Every report matching `query`, page after page (from `query.page`, default 1), fetched as
     * the loop asks for them. Reports are newest first, so messages sent while iterating can
     * shift later pages; filter by `batch_id` for a stable set.
     */
    iterate: (query: DeliveryReportQuery = {}, options: CallOptions = {}): AsyncIterableIterator<DeliveryReport> => {
      return everyPage(this.deliveryReports.list, query, options);
    },
  };

  /** The webhook events Pigeon sent (or is trying to send) to your `callback_url`s. */
  readonly webhooks = {
    /** `GET /v1/webhooks/events`: one page, newest first, each event with its delivery attempts. */
    listEvents: async (query: WebhookEventQuery = {}, options: CallOptions = {}): Promise<WebhookEventPage> => {
      const response = await this.#http.request({ method: 'GET', path: '/webhooks/events', query: { ...query }, signal: options.signal });
      return object(response) as unknown as WebhookEventPage;
    },
    /** `POST /v1/webhooks/events/{id}/retry`: sends an `undelivered` event once more; answers at once (202). */
    retryEvent: async (id: string, options: CallOptions = {}): Promise<WebhookEventAccepted> => {
      const response = await this.#http.request({ method: 'POST', path: `/webhooks/events/${encodeURIComponent(id)}/retry`, signal: options.signal });
      return object(response) as unknown as WebhookEventAccepted;
    },
  };

  /** The account. */
  readonly account = {
    /** `GET /v1/account`: name, state and credit balance. */
    get: async (options: CallOptions = {}): Promise<AccountResult> => {
      const response = await this.#http.request({ method: 'GET', path: '/account', signal: options.signal });
      return object(response) as unknown as AccountResult;
    },
    /** `GET /v1/pricing?to=...`: what a segment to `to` costs now, and its next dated change. */
    pricing: async (to: string, options: CallOptions = {}): Promise<PricingResult> => {
      const response = await this.#http.request({ method: 'GET', path: '/pricing', query: { to }, signal: options.signal });
      return object(response) as unknown as PricingResult;
    },
  };
  /** Phone numbers assigned to the account (by the operator). */
  readonly numbers = {
    /** `GET /v1/numbers`, newest first. */
    list: async (options: CallOptions = {}): Promise<NumberList> => {
      const response = await this.#http.request({ method: 'GET', path: '/numbers', signal: options.signal });
      return object(response) as unknown as NumberList;
    },
  };

  /** Messages received on the account's numbers. */
  readonly inbound = {
    /** `GET /v1/sms/inbound`: one page, newest first. */
    list: async (query: InboundQuery = {}, options: CallOptions = {}): Promise<InboundPage> => {
      const response = await this.#http.request({ method: 'GET', path: '/sms/inbound', query: { ...query }, signal: options.signal });
      return object(response) as unknown as InboundPage;
    },
    /** Every message matching `query`, page after page, fetched as the loop asks for them. */
    iterate: (query: InboundQuery = {}, options: CallOptions = {}): AsyncIterableIterator<InboundMessage> => {
      return everyPage(this.inbound.list, query, options);
    },
    /**
     * `POST /v1/simulator/inbound`: with the simulator as carrier, delivers a message to one of the
     * account's numbers as a handset would (keywords included). Not retried after a network error.
     */
    simulate: async (message: SimulatedInbound, options: CallOptions = {}): Promise<InboundCreated> => {
      const response = await this.#http.request({ method: 'POST', path: '/simulator/inbound', body: message, signal: options.signal });
      return object(response) as unknown as InboundCreated;
    },
  };

  /** The account's opt-out list. */
  readonly optOuts = {
    /** `GET /v1/opt-outs`: one page, newest first. */
    list: async (query: OptOutQuery = {}, options: CallOptions = {}): Promise<OptOutPage> => {
      const response = await this.#http.request({ method: 'GET', path: '/opt-outs', query: { ...query }, signal: options.signal });
      return object(response) as unknown as OptOutPage;
    },
    /** `POST /v1/opt-outs`: adds a recipient; `created` is false when they were on the list already (200). */
    add: async (phone: string, options: CallOptions = {}): Promise<OptOutResult & { created: boolean }> => {
      const response = await this.#http.request({ method: 'POST', path: '/opt-outs', body: { phone }, signal: options.signal });
      return { ...(object(response) as unknown as OptOutResult), created: response.status === 201 };
    },
    /** `DELETE /v1/opt-outs/{phone}`: a recipient who opted out by keyword is `opt_out_by_recipient` (409). */
    remove: async (phone: string, options: CallOptions = {}): Promise<void> => {
      await this.#http.request({ method: 'DELETE', path: `/opt-outs/${encodeURIComponent(phone)}`, signal: options.signal });
    },
  };

  /** The account's audit log: every change made by its people, its keys or the operator. */
  readonly auditEvents = {
    /** `GET /v1/audit-events`: one page, newest first (scope `account:read`). */
    list: async (query: AuditEventQuery = {}, options: CallOptions = {}): Promise<AuditEventPage> => {
      const response = await this.#http.request({ method: 'GET', path: '/audit-events', query: { ...query }, signal: options.signal });
      return object(response) as unknown as AuditEventPage;
    },
    /** Every record matching `query`, page after page, fetched as the loop asks for them. */
    iterate: (query: AuditEventQuery = {}, options: CallOptions = {}): AsyncIterableIterator<AuditEvent> => {
      return everyPage(this.auditEvents.list, query, options);
    },
  };

  /** Where the account's own events go (`sms.received`, `recipient.opted_out`, `recipient.opted_in`). */
  readonly events = {
    /** `PUT /v1/account/events-url`. */
    setUrl: async (url: string, options: CallOptions = {}): Promise<EventsUrlResult> => {
      const response = await this.#http.request({ method: 'PUT', path: '/account/events-url', body: { url }, signal: options.signal });
      return object(response) as unknown as EventsUrlResult;
    },
    /** `DELETE /v1/account/events-url`. */
    clearUrl: async (options: CallOptions = {}): Promise<void> => {
      await this.#http.request({ method: 'DELETE', path: '/account/events-url', signal: options.signal });
    },
  };

  /** Verify: one-time codes with the fraud guard (services, verifications, checks). */
  readonly verify = {
    /** `POST /v1/verify/services` (scope `account:write`). */
    createService: async (request: VerifyServiceRequest, options: CallOptions = {}): Promise<Success<VerifyService>> => {
      const response = await this.#http.request({ method: 'POST', path: '/verify/services', body: request, signal: options.signal });
      return object(response) as unknown as Success<VerifyService>;
    },
    /** `GET /v1/verify/services`, newest first. */
    listServices: async (options: CallOptions = {}): Promise<Success<VerifyService[]>> => {
      const response = await this.#http.request({ method: 'GET', path: '/verify/services', signal: options.signal });
      return object(response) as unknown as Success<VerifyService[]>;
    },
    /** `GET /v1/verify/services/{id}`. */
    getService: async (id: string, options: CallOptions = {}): Promise<Success<VerifyService>> => {
      const response = await this.#http.request({ method: 'GET', path: `/verify/services/${encodeURIComponent(id)}`, signal: options.signal });
      return object(response) as unknown as Success<VerifyService>;
    },
    /** `PATCH /v1/verify/services/{id}`: only the fields given change. */
    updateService: async (id: string, changes: VerifyServiceChanges, options: CallOptions = {}): Promise<Success<VerifyService>> => {
      const response = await this.#http.request({ method: 'PATCH', path: `/verify/services/${encodeURIComponent(id)}`, body: changes, signal: options.signal });
      return object(response) as unknown as Success<VerifyService>;
    },
    /** `DELETE /v1/verify/services/{id}`. */
    deleteService: async (id: string, options: CallOptions = {}): Promise<void> => {
      await this.#http.request({ method: 'DELETE', path: `/verify/services/${encodeURIComponent(id)}`, signal: options.signal });
    },
    /**
     * `POST /v1/verify/services/{id}/verifications`: sends a code to `to`, or the same code again
     * while one is pending there. Retried safely: every call carries an Idempotency-Key.
     */
    start: async (serviceId: string, to: string, options: SendOptions = {}): Promise<Success<Verification>> => {
      const response = await this.#http.request({
        method: 'POST',
        path: `/verify/services/${encodeURIComponent(serviceId)}/verifications`,
        body: { to },
        idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
        signal: options.signal,
      });
      return object(response) as unknown as Success<Verification>;
    },
    /**
     * `POST /v1/verify/services/{id}/checks`: `valid` says whether the code is right. Not retried
     * after a network error: a check that did happen took one of the verification's checks.
     */
    check: async (serviceId: string, request: VerificationCheckRequest, options: CallOptions = {}): Promise<Success<VerificationCheck>> => {
      const response = await this.#http.request({ method: 'POST', path: `/verify/services/${encodeURIComponent(serviceId)}/checks`, body: request, signal: options.signal });
      return object(response) as unknown as Success<VerificationCheck>;
    },
    /** `GET /v1/verify/verifications/{id}`. */
    get: async (id: string, options: CallOptions = {}): Promise<Success<Verification>> => {
      const response = await this.#http.request({ method: 'GET', path: `/verify/verifications/${encodeURIComponent(id)}`, signal: options.signal });
      return object(response) as unknown as Success<Verification>;
    },
    /** `POST /v1/verify/verifications/{id}/cancel`: the code stops working. */
    cancel: async (id: string, options: CallOptions = {}): Promise<Success<Verification>> => {
      const response = await this.#http.request({ method: 'POST', path: `/verify/verifications/${encodeURIComponent(id)}/cancel`, signal: options.signal });
      return object(response) as unknown as Success<Verification>;
    },
    /** `GET /v1/verify/blocks`: the account's number ranges the fraud guard blocks now. */
    blocks: async (options: CallOptions = {}): Promise<Success<VerifyBlock[]>> => {
      const response = await this.#http.request({ method: 'GET', path: '/verify/blocks', signal: options.signal });
      return object(response) as unknown as Success<VerifyBlock[]>;
    },
    /** The safe list: numbers and range prefixes the fraud guard's velocity and conversion rules never refuse. */
    safeList: {
      /** `GET /v1/verify/safe-list`. */
      list: async (options: CallOptions = {}): Promise<Success<SafeListEntry[]>> => {
        const response = await this.#http.request({ method: 'GET', path: '/verify/safe-list', signal: options.signal });
        return object(response) as unknown as Success<SafeListEntry[]>;
      },
      /** `POST /v1/verify/safe-list`; `created` is false when the entry was there already. */
      add: async (entry: string, options: CallOptions = {}): Promise<Success<{ entry: string }> & { created: boolean }> => {
        const response = await this.#http.request({ method: 'POST', path: '/verify/safe-list', body: { entry }, signal: options.signal });
        return { ...(object(response) as unknown as Success<{ entry: string }>), created: response.status === 201 };
      },
      /** `DELETE /v1/verify/safe-list/{entry}`. */
      remove: async (entry: string, options: CallOptions = {}): Promise<void> => {
        await this.#http.request({ method: 'DELETE', path: `/verify/safe-list/${encodeURIComponent(entry)}`, signal: options.signal });
      },
    },
  };

  /** The account's quiet hours: when marketing messages may reach a phone, in its local time. */
  readonly quietHours = {
    /** `GET /v1/account/quiet-hours` (scope `account:read`). */
    get: async (options: CallOptions = {}): Promise<QuietHoursResult> => {
      const response = await this.#http.request({ method: 'GET', path: '/account/quiet-hours', signal: options.signal });
      return object(response) as unknown as QuietHoursResult;
    },
    /** `PUT /v1/account/quiet-hours` (scope `account:write`): never wider than 08:00-21:00. */
    set: async (window: QuietHours, options: CallOptions = {}): Promise<QuietHoursResult> => {
      const response = await this.#http.request({ method: 'PUT', path: '/account/quiet-hours', body: { ...window }, signal: options.signal });
      return object(response) as unknown as QuietHoursResult;
    },
  };
}
