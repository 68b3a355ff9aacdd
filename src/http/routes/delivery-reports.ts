/** `GET /v1/sms/delivery-reports`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Context } from '../../services/context.ts';
import { listDeliveryReports, type DeliveryReportRow } from '../../services/messages/reports.ts';
import { chargedCredits } from '../../domain/rate-card.ts';
import { iso } from '../../util/ids.ts';
import { principalOf } from '../auth.ts';
import { ReportsList, ReportsQuery } from '../schemas.ts';

export function deliveryReport(m: DeliveryReportRow) {
  return {
    message_id: m.id,
    batch_id: m.batch_id,
    to: m.recipient,
    from: m.sender,
    status: m.status,
    segments: m.segments,
    encoding: m.encoding,
    credits_used: chargedCredits(m),
    error_code: m.error_code,
    error_message: m.error_message,
    created_at: iso(Number(m.created_at)),
    sent_at: iso(m.sent_at === null ? null : Number(m.sent_at)),
    delivered_at: iso(m.delivered_at === null ? null : Number(m.delivered_at)),
    send_at: iso(m.send_at === null ? null : Number(m.send_at)),
    category: m.category === 'marketing' ? ('marketing' as const) : ('transactional' as const),
    held_until: iso(m.held_until == null ? null : Number(m.held_until)),
  };
}

export function deliveryReportRoutes(ctx: Context): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/sms/delivery-reports',
      {
        config: { scope: 'reports:read' },
        schema: {
          summary: 'List delivery reports, newest first',
          tags: ['Delivery reports'],
          querystring: ReportsQuery,
          response: { 200: ReportsList },
        },
      },
      async (request) => {
        const { message_id, batch_id, status } = request.query;
        const page = request.query.page ?? 1;
        const limit = request.query.limit ?? 50;
        const { rows, total } = await listDeliveryReports(
          ctx,
          { accountId: principalOf(request).accountId, messageId: message_id, batchId: batch_id, status },
          page,
          limit,
        );
        return { status: 'success' as const, data: rows.map(deliveryReport), pagination: { page, limit, total } };
      },
    );
  };
}
