/**
 * JSON schemas of the request and response bodies, shared by the routes (validation and fast
 * serialisation) and by the generated OpenAPI document.
 */
import { Type } from 'typebox';
import { AppError, type ErrorCode, type ErrorDetail } from '../errors/catalogue.ts';

/**
 * Length limits of the request fields (DECISIONS.md §9). Each is checked by the route's schema,
 * before the body reaches a service or any lookup, so an over-long value costs the server its
 * parse and nothing more: it never becomes a cache key, a query parameter or part of a stored
 * response. `to` allows a 15-digit E.164 number with visual separators; `from` an 11-character
 * Sender ID or an E.164 number.
 */
export const LIMITS = {
  to: 32,
  from: 16,
  message: 1600,
  callbackUrl: 2048,
  senderIdName: 11,
  idempotencyKey: 255,
  sendAt: 64,
} as const;

interface AjvError {
  instancePath?: string;
  keyword?: string;
}

/**
 * A route's `schemaErrorFormatter` that answers an over-long field with that field's own code
 * (`from` too long is `invalid_sender_id`, as an unknown `from` would be), so that the schema
 * limit does not change the code a client sees. `codes` maps `<part>:<field>` (`body:from`,
 * `headers:idempotency-key`) to the code and the name shown. Any other validation failure keeps
 * the generic `invalid_request` of the error handler.
 */
export function fieldErrors(codes: Record<string, { code: ErrorCode; field: string; limit: number; message?: string; anyRule?: string }>) {
  return (errors: AjvError[], dataVar: string): Error => {
    const first = errors[0];
    const named = first ? codes[`${dataVar}:${(first.instancePath ?? '').slice(1)}`] : undefined;
    // A field with `anyRule` answers every schema failure (type, range) with its own code.
    const spec = named && (named.anyRule || first!.keyword === 'maxLength' || first!.keyword === 'minLength') ? named : undefined;
    if (!spec) return new Error('The request is invalid.');
    const rule = spec.anyRule ?? `must be at most ${spec.limit.toLocaleString('en-US')} characters`;
    const details: ErrorDetail[] = [{ field: spec.field, code: spec.code, message: spec.message ?? rule }];
    return new AppError(spec.code, `\`${spec.field}\` ${spec.message ?? rule}.`, { details });
  };
}

/** `callback_events` fails as a whole, whichever of its entries is wrong. */
const CALLBACK_EVENTS_RULE = { code: 'invalid_request', field: 'callback_events', limit: 0, anyRule: 'must list 1 to 3 of sms.sent, sms.delivered, sms.failed, each once' } as const;

/** The over-long fields of a send or a bulk, and the codes they answer with. */
export const SendFieldErrors = fieldErrors({
  'body:to': { code: 'invalid_recipient', field: 'to', limit: LIMITS.to },
  'body:from': { code: 'invalid_sender_id', field: 'from', limit: LIMITS.from },
  'body:message': { code: 'invalid_message', field: 'message', limit: LIMITS.message },
  'body:callback_url': { code: 'invalid_callback_url', field: 'callback_url', limit: LIMITS.callbackUrl },
  // An entry's failure is named by its place in the list (at most three).
  'body:callback_events': CALLBACK_EVENTS_RULE,
  'body:callback_events/0': CALLBACK_EVENTS_RULE,
  'body:callback_events/1': CALLBACK_EVENTS_RULE,
  'body:callback_events/2': CALLBACK_EVENTS_RULE,
  'headers:idempotency-key': { code: 'invalid_request', field: 'Idempotency-Key', limit: LIMITS.idempotencyKey, message: 'must be 1 to 255 characters' },
  'body:send_at': { code: 'invalid_send_at', field: 'send_at', limit: LIMITS.sendAt, anyRule: 'must be an RFC 3339 date-time with an offset, at most 35 days ahead' },
  'body:validity_period': { code: 'invalid_validity_period', field: 'validity_period', limit: 0, anyRule: 'must be a whole number of seconds from 60 to 259,200' },
});

/** DECISIONS.md §16: what kind of traffic a message is. */
export const Category = Type.Union([Type.Literal('transactional'), Type.Literal('marketing')], {
  description: '`transactional` (the default) or `marketing`: marketing messages are held outside the account\'s quiet-hours window in the recipient\'s time zone.',
});

/** DECISIONS.md §16: tracked links, the same on a single send and a bulk. */
const TrackLinks = Type.Optional(
  Type.Boolean({
    description:
      'Replace every http:// and https:// URL of the text by a short link of its own (LINK_BASE_URL/<code>, 8 characters) that redirects to it and counts its clicks (`GET /v1/sms/links`, the `sms.link_clicked` event). Segments and credits count the rewritten text. At most 10 links per message.',
  }),
);

/** `send_at` and `validity_period`, the same on a single send and at the top level of a bulk. */
const SchedulingFields = {
  category: Type.Optional(Category),
  send_at: Type.Optional(
    Type.String({
      maxLength: LIMITS.sendAt,
      description:
        'When to release the message to dispatch: an RFC 3339 date-time with an offset, up to 35 days ahead (up to 30 s in the past counts as now). The message is debited at once and stays `scheduled` until then.',
      examples: ['2026-03-02T09:00:00+01:00'],
    }),
  ),
  validity_period: Type.Optional(
    Type.Integer({
      minimum: 60,
      maximum: 259_200,
      description: 'Seconds, counted from `send_at` (or acceptance), within which the message must be dispatched and delivered; past it, it fails with `expired`. Default: the carrier\'s own setting.',
    }),
  ),
};

/**
 * A string or null, written `type: ['string', 'null']` rather than as a union: fast-json-stringify
 * serialises a union by validating the value against each branch (running the date-time format
 * check on every timestamp), which was a quarter of the CPU of a page of delivery reports; a list
 * of types costs a typeof.
 */
export function NullableString(options: { format?: 'date-time'; description?: string } = {}) {
  return Type.Unsafe<string | null>({ type: ['string', 'null'], ...options });
}

export const ErrorBody = Type.Object(
  {
    status: Type.Literal('error'),
    code: Type.String({ description: 'Machine-readable error code; see /docs/errors.' }),
    message: Type.String(),
    docs_url: Type.String(),
    details: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), code: Type.String(), message: Type.String() })),
    ),
  },
  { $id: 'ErrorBody' },
);

export const Encoding = Type.Union([Type.Literal('GSM-7'), Type.Literal('UCS-2')]);
export const MessageStatus = Type.Union([
  Type.Literal('scheduled'),
  Type.Literal('pending'),
  Type.Literal('sent'),
  Type.Literal('delivered'),
  Type.Literal('failed'),
  Type.Literal('canceled'),
]);

/** Pigeon's own: the delivery events a send's `callback_url` gets (submit-messages.ts, checkCallbackEvents). */
const CallbackEvents = Type.Optional(
  Type.Array(Type.Union([Type.Literal('sms.sent'), Type.Literal('sms.delivered'), Type.Literal('sms.failed')]), {
    minItems: 1,
    maxItems: 3,
    uniqueItems: true,
    description:
      'The delivery events `callback_url` gets: any of `sms.sent`, `sms.delivered`, `sms.failed` (every one when absent). `["sms.delivered","sms.failed"]` asks for the final outcome alone, one event a message. Needs `callback_url`.',
    examples: [['sms.delivered', 'sms.failed']],
  }),
);

export const SendBody = Type.Object({
  to: Type.String({ maxLength: LIMITS.to, description: 'Recipient, E.164 (visual separators allowed); at most 32 characters.', examples: ['+14155552671'] }),
  from: Type.String({ maxLength: LIMITS.from, description: 'An approved Sender ID of the account; at most 16 characters.', examples: ['Acme'] }),
  message: Type.String({ maxLength: LIMITS.message, description: 'Message body, 1 to 1,600 characters.' }),
  callback_url: Type.Optional(
    Type.String({ maxLength: LIMITS.callbackUrl, description: 'HTTPS URL that receives the delivery webhook events of this message; at most 2,048 characters.' }),
  ),
  callback_events: CallbackEvents,
  track_links: TrackLinks,
  ...SchedulingFields,
});

export const SendResult = Type.Object({
  status: Type.Literal('success'),
  message_id: Type.String(),
  to: Type.String({ description: 'The recipient exactly as given.' }),
  from: Type.String({ description: 'The Sender ID used, in its registered spelling.' }),
  segments: Type.Integer(),
  encoding: Encoding,
  credits_used: Type.Integer(),
  credits_remaining: Type.Integer(),
  send_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the message is released to dispatch (UTC), when the request gave `send_at`.' })),
  validity_period: Type.Optional(Type.Integer({ description: 'The validity period in seconds, when the request gave one.' })),
  held_until: Type.Optional(NullableString({ format: 'date-time', description: 'A marketing message only: when the quiet-hours window next opens in the recipient\'s time zone(s), if it is held until then (it stays `pending`); null when it goes at once.' })),
});

export const QuoteResult = Type.Object({
  status: Type.Literal('success'),
  data: Type.Object({
    segments: Type.Integer(),
    encoding: Encoding,
    credits_per_segment: Type.Integer({ description: 'The destination\'s price on the account\'s rate card now.' }),
    credits: Type.Integer({ description: 'What the send would be charged: segments × credits_per_segment.' }),
    held_until: Type.Optional(
      NullableString({
        format: 'date-time',
        description: 'A marketing message only (`"category":"marketing"`): when the quiet-hours window next opens in the recipient\'s time zone(s), if the send would be held until then at the time it would go (now, or its `send_at`); null when it would go at once.',
      }),
    ),
  }),
});

export const PricingQuery = Type.Object({
  to: Type.String({ maxLength: 64, description: 'A destination number, E.164 (separators allowed, as in a send).' }),
});

export const PricingBody = Type.Object({
  status: Type.Literal('success'),
  data: Type.Object({
    to: Type.String({ description: 'The number, normalised to E.164.' }),
    prefix: Type.String({ description: 'The rate card\'s longest prefix matching it (`+` alone matches every number).' }),
    credits_per_segment: Type.Integer(),
    effective_from: Type.String({ format: 'date-time', description: 'Since when this price applies.' }),
    next_change: Type.Union(
      [
        Type.Object({
          credits_per_segment: Type.Union([Type.Integer(), Type.Literal('blocked'), Type.Null()], { description: 'The price from `effective_from` on: `blocked` when sends there will be refused, null when it will have no price.' }),
          effective_from: Type.String({ format: 'date-time' }),
        }),
        Type.Null(),
      ],
      { description: 'The next dated change of this destination\'s price, or null.' },
    ),
  }),
});

export const BulkBody = Type.Object({
  from: Type.String({ maxLength: LIMITS.from, description: 'An approved Sender ID, applied to every message; at most 16 characters.' }),
  messages: Type.Array(
    // No schema limit on an entry's fields: an over-long `to` or `message` is that entry's error
    // (`invalid_recipient`, `invalid_message`), not the whole request's; the body limit bounds them.
    Type.Object({
      to: Type.String({ description: 'Recipient, E.164; an entry whose `to` is over 32 characters is refused with `invalid_recipient`.' }),
      message: Type.String({ description: 'Body for that recipient, 1 to 1,600 characters.' }),
    }),
    { description: 'At most BULK_MAX_MESSAGES entries (10,000 by default).' },
  ),
  callback_url: Type.Optional(
    Type.String({ maxLength: LIMITS.callbackUrl, description: 'HTTPS URL that receives the events of every message of the batch; at most 2,048 characters.' }),
  ),
  callback_events: CallbackEvents,
  track_links: TrackLinks,
  ...SchedulingFields,
});

export const BulkResult = Type.Object({
  status: Type.Literal('success'),
  batch_id: Type.String(),
  total: Type.Integer(),
  queued: Type.Integer(),
  credits_used: Type.Integer(),
  credits_remaining: Type.Integer(),
  send_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the batch is released to dispatch (UTC), when the request gave `send_at`.' })),
  validity_period: Type.Optional(Type.Integer({ description: 'The validity period in seconds, when the request gave one.' })),
  messages: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message_id: Type.String(),
      to: Type.String(),
      segments: Type.Integer(),
      encoding: Encoding,
      held_until: Type.Optional(NullableString({ format: 'date-time', description: 'A marketing message only: when the quiet-hours window next opens in the recipient\'s time zone(s), if it is held until then (it stays `pending`); null when it goes at once.' })),
    }),
  ),
  errors: Type.Array(
    Type.Object({ index: Type.Integer(), to: Type.String(), code: Type.String(), message: Type.String() }),
  ),
});

export const SenderIdRecord = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected')]),
  created_at: Type.String({ format: 'date-time' }),
});

export const SenderIdList = Type.Object({ status: Type.Literal('success'), data: Type.Array(SenderIdRecord) });
export const SenderIdCreated = Type.Object({ status: Type.Literal('success'), data: SenderIdRecord });
export const SenderIdBody = Type.Object({ name: Type.String({ maxLength: LIMITS.senderIdName, description: '1 to 11 letters and digits.' }) });
export const SenderIdFieldErrors = fieldErrors({
  'body:name': { code: 'invalid_sender_id_name', field: 'name', limit: LIMITS.senderIdName },
});

export const NumberRecord = Type.Object({
  number: Type.String({ description: 'E.164, or a short code of 3 to 8 digits.' }),
  label: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
});
export const NumberList = Type.Object({ status: Type.Literal('success'), data: Type.Array(NumberRecord) });

export const InboundRecord = Type.Object({
  id: Type.String({ description: '`in_…`' }),
  from: Type.String({ description: 'The sender, in E.164 when the carrier gave a phone number.' }),
  to: Type.String({ description: 'The account’s number it was sent to.' }),
  message: Type.String(),
  segments: Type.Integer(),
  encoding: Type.String({ description: '`GSM-7`, `UCS-2`, `Latin-1` or `8-bit`.' }),
  received_at: Type.String({ format: 'date-time' }),
  incomplete: Type.Optional(Type.Literal(true, { description: 'Present when a multi-part message was stored with the parts that came within 60 seconds.' })),
});
export const InboundQuery = Type.Object({
  from: Type.Optional(Type.String({ maxLength: 32 })),
  to: Type.Optional(Type.String({ maxLength: 32 })),
  since: Type.Optional(Type.String({ maxLength: 40, description: 'RFC 3339; received at or after.' })),
  until: Type.Optional(Type.String({ maxLength: 40, description: 'RFC 3339; received at or before.' })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});
export const InboundList = Type.Object({ status: Type.Literal('success'), data: Type.Array(InboundRecord), pagination: Type.Object({ page: Type.Integer(), limit: Type.Integer(), total: Type.Integer() }) });
export const SimulatedInboundBody = Type.Object({
  from: Type.String({ maxLength: 32, description: 'The sender, E.164.' }),
  to: Type.String({ maxLength: 32, description: 'One of the account’s numbers.' }),
  message: Type.String({ maxLength: 6400 }),
});
export const InboundCreated = Type.Object({ status: Type.Literal('success'), data: InboundRecord });
export const EventsUrlBody = Type.Object({ url: Type.String({ maxLength: 2048, description: 'An absolute https:// URL.' }) });
const Clock = (what: string) => Type.String({ maxLength: 5, description: `${what}, HH:MM in the recipient's local time (24-hour clock).`, examples: ['08:00'] });
export const QuietHoursBody = Type.Object({ start: Clock('When the window opens'), end: Clock('When it closes (exclusive)') });
export const QuietHoursAnswer = Type.Object({ status: Type.Literal('success'), data: Type.Object({ start: Type.String(), end: Type.String() }) });
export const EventsUrlSet = Type.Object({ status: Type.Literal('success'), data: Type.Object({ url: Type.Union([Type.String(), Type.Null()]) }) });

export const OptOutRecord = Type.Object({
  phone: Type.String({ description: 'E.164.' }),
  source: Type.Union([Type.Literal('keyword'), Type.Literal('api'), Type.Literal('operator')], { description: '`keyword`: the recipient replied STOP (only their START lifts it).' }),
  created_at: Type.String({ format: 'date-time' }),
});
export const OptOutsQuery = Type.Object({
  phone: Type.Optional(Type.String({ maxLength: 32 })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});
export const OptOutsList = Type.Object({ status: Type.Literal('success'), data: Type.Array(OptOutRecord), pagination: Type.Object({ page: Type.Integer(), limit: Type.Integer(), total: Type.Integer() }) });
export const OptOutBody = Type.Object({ phone: Type.String({ maxLength: 32, description: 'E.164.' }) });
export const OptOutAdded = Type.Object({ status: Type.Literal('success'), data: OptOutRecord });

/** `Idempotency-Key` on the sends (DECISIONS.md §5). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: LIMITS.idempotencyKey,
      description: 'Up to 255 characters; the same request with the same key is answered once, for 24 hours.',
    }),
  ),
});

export const DeliveryReport = Type.Object({
  message_id: Type.String(),
  batch_id: NullableString(),
  to: Type.String(),
  from: Type.String(),
  status: MessageStatus,
  segments: Type.Integer(),
  encoding: Encoding,
  credits_used: Type.Integer({ description: 'Credits charged at acceptance: segments × the destination\'s price then. A refund gives back exactly this.' }),
  error_code: NullableString(),
  error_message: NullableString(),
  created_at: Type.String({ format: 'date-time' }),
  sent_at: NullableString({ format: 'date-time' }),
  delivered_at: NullableString({ format: 'date-time' }),
  send_at: NullableString({ format: 'date-time', description: 'When a scheduled message is (or was) released to dispatch; null for a message sent at once.' }),
  category: Category,
  held_until: NullableString({ format: 'date-time', description: 'A marketing message held by the account\'s quiet hours: when the window next opens in the recipient\'s time zone(s); null otherwise.' }),
});

export const CancelResult = Type.Object({
  status: Type.Literal('success'),
  data: Type.Object({
    canceled: Type.Array(Type.String(), { description: 'The messages moved from `scheduled` to `canceled`.' }),
    credits_refunded: Type.Integer({ description: 'Credits given back, in one ledger row.' }),
  }),
});

export const RedactResult = Type.Object({
  status: Type.Literal('success'),
  data: Type.Object({
    redacted: Type.Array(Type.String(), { description: 'The messages whose text is removed and number masked (all of them again on a repeat).' }),
  }),
});

export const Pagination = Type.Object({ page: Type.Integer(), limit: Type.Integer(), total: Type.Integer() });

export const ReportsQuery = Type.Object({
  message_id: Type.Optional(Type.String({ maxLength: 100 })),
  batch_id: Type.Optional(Type.String({ maxLength: 100 })),
  status: Type.Optional(MessageStatus),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});

export const ReportsList = Type.Object({
  status: Type.Literal('success'),
  data: Type.Array(DeliveryReport),
  pagination: Pagination,
});

export const AccountBody = Type.Object({
  status: Type.Literal('success'),
  data: Type.Object({
    id: Type.String(),
    name: Type.String(),
    status: Type.Union([Type.Literal('active'), Type.Literal('suspended')]),
    credits_remaining: Type.Integer(),
    messages_pending: Type.Integer({ description: 'Messages accepted and not yet handed to the carrier: the account’s share of the dispatch backlog.' }),
  }),
});

/** `POST /v1/privacy/erasures` (DECISIONS.md §13). */
export const ErasureBody = Type.Object({ phone: Type.String({ maxLength: 32, description: 'The number to erase, E.164.' }) });
export const ErasureRecord = Type.Object({
  id: Type.String({ description: '`era_…`' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('done')], { description: '`pending` until every stored message with the number is redacted (a message still on its way is redacted once final).' }),
  phone: Type.String({ description: 'The number, masked (last four digits XXXX): the record does not keep what it erased.' }),
  counts: Type.Object({
    messages: Type.Integer(),
    inbound_messages: Type.Integer(),
    events: Type.Integer({ description: 'Stored webhook event payloads rewritten.' }),
    idempotent_responses: Type.Integer({ description: 'Stored idempotent responses rewritten.' }),
  }),
  created_at: Type.String({ format: 'date-time' }),
  finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export const ErasureAccepted = Type.Object({ status: Type.Literal('success'), data: ErasureRecord });
