/**
 * The owner's overview, /dashboard: the first steps until they are done, the balance, the delivery
 * rate and the messages of the last 30 days.
 */
import type { FastifyInstance } from 'fastify';
import { MESSAGE_STATUSES, type MessageStatus } from '../../../domain/message-status.ts';
import { dailyMessageStats } from '../../../services/messages/reports.ts';
import { onboardingSteps, type OnboardingStepId } from '../../../services/accounts/onboarding.ts';
import { html, raw, type Html } from '../../html.ts';
import { statusBadge } from '../layout.ts';
import { state, type OwnerArea, type OwnerRequestState } from './owner-area.ts';

export function overviewPages(app: FastifyInstance, { ctx, render }: OwnerArea): void {
  /** The first steps, shown on the overview until every one is done. */
  const checklist = async (account: OwnerRequestState['account']): Promise<Html> => {
    const { steps, credits } = await onboardingSteps(ctx, account.id);
    const done = steps.filter((st) => st.done).length;
    if (done === steps.length) return html``;
    const simulator = ctx.config.carrier === 'simulator';
    const text: Record<OnboardingStepId, { title: Html; todo: Html; ok: Html }> = {
      credits: {
        title: html`Get credits`,
        todo: html`The balance is ${credits} credits and every message segment costs one. Credits are added by the operator of this Pigeon server: ask them for a top-up (<code>pigeon credits add ${account.id} AMOUNT</code>).`,
        ok: html`Balance: ${credits.toLocaleString('en')} credits (<a href="/dashboard/credits">ledger</a>).`,
      },
      'sender-id': {
        title: html`Register a Sender ID`,
        todo: html`The name your messages come from. <a href="/dashboard/sender-ids">Register one</a>; the operator reviews it.`,
        ok: html`An approved Sender ID can go in <code>from</code>.`,
      },
      'api-key': {
        title: html`Generate an API key`,
        todo: html`<a href="/dashboard/settings/api-keys">Generate a key</a> for your application; it is shown once.`,
        ok: html`Your application authenticates with it (<a href="/dashboard/settings/api-keys">keys</a>).`,
      },
      'first-send': {
        title: simulator ? html`Send a test message to the simulator` : html`Send a first message`,
        todo: simulator
          ? html`This server uses the built-in carrier simulator: nothing reaches a phone. Numbers ending in <code>0000</code> fail, <code>2222</code> are rejected, any other is delivered. The <a href="/docs/guides/quick-start">quick start</a> has the <code>curl</code> command.`
          : html`The <a href="/docs/guides/quick-start">quick start</a> has the <code>curl</code> command.`,
        ok: html`See it in <a href="/dashboard/messages">Messages</a>.`,
      },
      webhook: {
        title: html`Receive a delivery webhook`,
        todo: html`Give a send an HTTPS <code>callback_url</code> and Pigeon posts each status change to it; see the <a href="/docs/guides/webhooks">webhooks guide</a>.`,
        ok: html`Your receiver answered a signed event.`,
      },
    };
    return html`<section class="checklist" aria-labelledby="checklist-title"><h2 id="checklist-title">Getting started: ${done} of ${steps.length} done</h2>
<ol>${steps.map((st) => {
      const t = text[st.id];
      const kind = st.done ? 'done' : st.waiting ? 'waiting' : 'todo';
      const mark = st.done ? '✓' : st.waiting ? '…' : '';
      const label = st.done ? 'Done' : st.waiting ? 'Waiting for review' : 'To do';
      return html`<li class="step step-${kind}" data-step="${st.id}" data-state="${kind}"><span class="mark" aria-hidden="true">${mark}</span><span class="visually-hidden">${label}: </span><strong>${t.title}</strong> <span class="hint">${st.waiting ? html`Waiting for the operator's review (<a href="/dashboard/sender-ids">Sender IDs</a>).` : st.done ? t.ok : t.todo}</span></li>`;
    })}</ol></section>`;
  };

  app.get('/', async (request, reply) => {
    const { account } = state(request);
    const start = await checklist(account);
    const stats = await dailyMessageStats(ctx, account.id, 30);
    const total = (s: MessageStatus) => stats.counts[s].reduce((a, b) => a + b, 0);
    const rate = stats.deliveryRate === null ? '–' : `${(stats.deliveryRate * 100).toFixed(1)} %`;
    // The chart data goes into a JSON script element; `<` is escaped so that no text can close it.
    const json = JSON.stringify(stats).replace(/</g, '\\u003c');
    return render(
      request,
      reply,
      'Overview',
      'overview',
      html`${start}<div class="stats">
<div class="stat"><span>Credit balance</span><strong id="balance">${Number(account.credits).toLocaleString('en')}</strong><a href="/dashboard/credits">Ledger</a></div>
<div class="stat"><span>Delivery rate, 30 days</span><strong id="delivery-rate">${rate}</strong><span class="muted">delivered of delivered + failed</span></div>
<div class="stat"><span>Messages, 30 days</span><strong>${MESSAGE_STATUSES.reduce((a, s) => a + total(s), 0)}</strong><span class="muted">${MESSAGE_STATUSES.map((s) => `${s} ${total(s)}`).join(' · ')}</span></div>
</div>
<section><h2 id="chart-title">Messages per day by status (last 30 days, UTC)</h2>
<div id="chart" role="img" aria-labelledby="chart-title"></div>
<script type="application/json" id="chart-data">${raw(json)}</script>
<p class="hint">Account <code>${account.id}</code> · ${account.name} · ${statusBadge(account.status)}</p></section>`,
      ['uPlot.min.css', 'uPlot.iife.min.js'],
    );
  });
}
