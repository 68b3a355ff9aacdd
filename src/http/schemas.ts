/**
 * JSON schemas of the request and response bodies, shared by the routes (validation and fast
 * serialisation) and by the generated OpenAPI document.
 */
import { Type } from 'typebox';

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
export const MessageStatus = Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('delivered'), Type.Literal('failed')]);

export const SendBody = Type.Object({
  to: Type.String({ description: 'Recipient, E.164 (visual separators allowed).', examples: ['+14155552671'] }),
  from: Type.String({ description: 'An approved Sender ID of the account.', examples: ['Acme'] }),
  message: Type.String({ description: 'Message body, 1 to 1,600 characters.' }),
  callback_url: Type.Optional(Type.String({ description: 'HTTPS URL that receives the delivery webhook events of this message.' })),
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
});

export const BulkBody = Type.Object({
  from: Type.String({ description: 'An approved Sender ID, applied to every message.' }),
  messages: Type.Array(
    Type.Object({
      to: Type.String({ description: 'Recipient, E.164.' }),
      message: Type.String({ description: 'Body for that recipient.' }),
    }),
    { description: 'At most BULK_MAX_MESSAGES entries (10,000 by default).' },
  ),
  callback_url: Type.Optional(Type.String({ description: 'HTTPS URL that receives the events of every message of the batch.' })),
});

export const BulkResult = Type.Object({
  status: Type.Literal('success'),
  batch_id: Type.String(),
  total: Type.Integer(),
  queued: Type.Integer(),
  credits_used: Type.Integer(),
  credits_remaining: Type.Integer(),
  messages: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message_id: Type.String(),
      to: Type.String(),
      segments: Type.Integer(),
      encoding: Encoding,
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
export const SenderIdBody = Type.Object({ name: Type.String({ description: '1 to 11 letters and digits.' }) });

export const DeliveryReport = Type.Object({
  message_id: Type.String(),
  batch_id: NullableString(),
  to: Type.String(),
  from: Type.String(),
  status: MessageStatus,
  segments: Type.Integer(),
  encoding: Encoding,
  error_code: NullableString(),
  error_message: NullableString(),
  created_at: Type.String({ format: 'date-time' }),
  sent_at: NullableString({ format: 'date-time' }),
  delivered_at: NullableString({ format: 'date-time' }),
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
