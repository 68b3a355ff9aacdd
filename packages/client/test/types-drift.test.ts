/**
 * Holds the client's hand-written types to the server's route schemas: the type check fails when
 * a field is added, removed or retyped on one side only. The runtime test holds the client's list
 * of error codes to the server's catalogue.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Static } from 'typebox';
import { catalogue } from '../../../src/errors/catalogue.ts';
import type * as Server from '../../../src/http/schemas.ts';
import type { OptOutEvent as ServerOptOutEvent, SmsReceivedEvent as ServerSmsReceivedEvent, WebhookEvent as ServerWebhookEvent } from '../../../src/http/openapi.ts';
import { KNOWN_ERROR_CODES } from '../src/errors.ts';
import type * as Client from '../src/types.ts';
import type * as ServerVerify from '../../../src/http/routes/verify.ts';
import type { LinksList as ServerLinksList, LinksQuery as ServerLinksQuery } from '../../../src/http/routes/sms-links.ts';
import type { AuditEventRecord as ServerAuditEvent, AuditEventsQuery as ServerAuditQuery } from '../../../src/http/routes/audit-events.ts';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Fits<A, B> = [A] extends [B] ? true : false;
const same = <T extends true>(_: T) => _;

same<Same<Static<typeof Server.SendBody>, Client.SendRequest>>(true);
same<Same<Static<typeof Server.SendResult>, Client.SendResult>>(true);
same<Same<Static<typeof Server.BulkBody>, Client.BulkRequest>>(true);
same<Same<Static<typeof Server.BulkResult>, Client.BulkResult>>(true);
// The client also accepts records without `id` (the guide's variant), so only one way round.
same<Fits<Static<typeof Server.SenderIdRecord>, Client.SenderId>>(true);
same<Same<Omit<Static<typeof Server.SenderIdRecord>, 'id'>, Omit<Client.SenderId, 'id'>>>(true);
same<Same<Static<typeof Server.DeliveryReport>, Client.DeliveryReport>>(true);
same<Same<Static<typeof Server.ReportsQuery>, Client.DeliveryReportQuery>>(true);
same<Same<Static<typeof Server.ReportsList>, Client.DeliveryReportPage>>(true);
same<Same<Static<typeof ServerLinksQuery>, Client.LinkQuery>>(true);
same<Same<Static<typeof ServerLinksList>, Client.LinkPage>>(true);
same<Same<Static<typeof Server.AccountBody>['data'], Client.Account>>(true);
same<Same<Static<typeof ServerWebhookEvent>, Client.WebhookEvent>>(true);
same<Same<Static<typeof Server.CancelResult>, Client.CancelResult>>(true);
same<Same<Static<typeof Server.QuoteResult>, Client.QuoteResult>>(true);
same<Same<Static<typeof Server.PricingBody>, Client.PricingResult>>(true);
same<Same<Static<typeof Server.NumberRecord>, Client.PhoneNumber>>(true);
same<Same<Static<typeof Server.NumberList>, Client.NumberList>>(true);
same<Same<Static<typeof Server.InboundRecord>, Client.InboundMessage>>(true);
same<Same<Static<typeof Server.InboundQuery>, Client.InboundQuery>>(true);
same<Same<Static<typeof Server.InboundList>, Client.InboundPage>>(true);
same<Same<Static<typeof Server.SimulatedInboundBody>, Client.SimulatedInbound>>(true);
same<Same<Static<typeof Server.OptOutRecord>, Client.OptOut>>(true);
same<Same<Static<typeof Server.OptOutsQuery>, Client.OptOutQuery>>(true);
same<Same<Static<typeof Server.OptOutsList>, Client.OptOutPage>>(true);
same<Same<Static<typeof Server.EventsUrlSet>, Client.EventsUrlResult>>(true);
same<Same<Static<typeof Server.QuietHoursBody>, Client.QuietHours>>(true);
same<Same<Static<typeof Server.QuietHoursAnswer>, Client.QuietHoursResult>>(true);
same<Same<Static<typeof ServerSmsReceivedEvent>, Client.SmsReceivedEvent>>(true);
same<Same<Static<typeof ServerOptOutEvent>, Client.OptOutEvent>>(true);

test('every error code the client knows is in the server catalogue', () => {
  const missing = KNOWN_ERROR_CODES.filter((code) => !Object.hasOwn(catalogue, code));
  assert.deepEqual(missing, []);
});

// The audit log (src/http/routes/audit-events.ts keeps its schemas beside its route).
same<Same<Static<typeof ServerAuditQuery>, Client.AuditEventQuery>>(true);
same<Fits<Static<typeof ServerAuditEvent>, Client.AuditEvent>>(true);

// Verify (src/http/routes/verify.ts keeps its schemas beside its routes).
same<Same<Static<typeof ServerVerify.ServiceBody>, Client.VerifyServiceRequest>>(true);
same<Same<Static<typeof ServerVerify.ServicePatch>, Client.VerifyServiceChanges>>(true);
same<Same<Static<typeof ServerVerify.Service>, Client.VerifyService>>(true);
same<Same<Static<typeof ServerVerify.Verification>, Client.Verification>>(true);
same<Same<Static<typeof ServerVerify.Check>, Client.VerificationCheck>>(true);
same<Same<Static<typeof ServerVerify.Block>, Client.VerifyBlock>>(true);
same<Same<Static<typeof ServerVerify.SafeListRecord>, Client.SafeListEntry>>(true);
