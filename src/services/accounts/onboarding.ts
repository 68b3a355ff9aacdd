/**
 * The first steps of a new account, each ticked off from the account's real state (never from a
 * "dismissed" flag): credits, an approved Sender ID, a first key, a first send, a webhook that
 * reached its receiver.
 */
import { onboardingFacts } from '../../store/repositories/onboarding.repository.ts';
import type { Context } from '../context.ts';

export type OnboardingStepId = 'credits' | 'sender-id' | 'api-key' | 'first-send' | 'webhook';

export interface OnboardingStep {
  id: OnboardingStepId;
  done: boolean;
  /** Started but waiting on someone else (a Sender ID in review). */
  waiting?: boolean;
}

export async function onboardingSteps(ctx: Context, accountId: string): Promise<{ steps: OnboardingStep[]; credits: number }> {
  const f = await onboardingFacts(ctx.store.db, accountId);
  return {
    credits: f.credits,
    steps: [
      { id: 'credits', done: f.toppedUp },
      { id: 'sender-id', done: f.senderIds.approved, waiting: !f.senderIds.approved && f.senderIds.pending },
      { id: 'api-key', done: f.hasKey },
      { id: 'first-send', done: f.hasMessage },
      { id: 'webhook', done: f.webhookDelivered },
    ],
  };
}
