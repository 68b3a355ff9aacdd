/**
 * The two-way pages of the owner's area: Inbox and Opt-outs (two-way-pages.ts), and the
 * Settings tab for the account's numbers, events URL and help text (events-settings-pages.ts).
 */
import type { FastifyRequest } from 'fastify';
import { eventsSettingsPages } from './events-settings-pages.ts';
import { settingsTabs, state, type OwnerPageGroup } from './owner-area.ts';
import { twoWayPages } from './two-way-pages.ts';

export const twoWayPageGroup: OwnerPageGroup = (app, area) => {
  const account = (request: FastifyRequest) => ({ account: state(request).account, csrf: state(request).session.csrf_token });
  twoWayPages(app, area.ctx, { account, render: area.render });
  eventsSettingsPages(app, area.ctx, { account, render: area.render, tabs: (current) => settingsTabs(current as 'events') });
};
