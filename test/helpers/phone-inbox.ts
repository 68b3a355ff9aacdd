/**
 * What each phone received from the harness's carrier, oldest first: tests learn Verify's codes
 * the way a phone does, from the text the carrier is given, never from Pigeon's tables.
 */
import assert from 'node:assert/strict';
import type { OutboundMessage } from '../../src/carriers/carrier.ts';
import type { Harness } from './harness.ts';

export type PhoneInbox = Map<string, string[]>;

export function phoneInbox(h: Pick<Harness, 'carrier'>): PhoneInbox {
  const inbox: PhoneInbox = new Map();
  const submit = h.carrier.submit.bind(h.carrier);
  h.carrier.submit = async (messages: OutboundMessage[]) => {
    for (const m of messages) inbox.set(m.recipient, [...(inbox.get(m.recipient) ?? []), m.body]);
    return submit(messages);
  };
  return inbox;
}

/** The code at the end of the last text the phone received, once the workers sent what was queued. */
export async function lastCode(h: Pick<Harness, 'workers'>, inbox: PhoneInbox, phone: string): Promise<string> {
  await h.workers.drain();
  const texts = inbox.get(phone) ?? [];
  const match = /(\d{4,10})$/.exec(texts.at(-1) ?? '');
  assert.ok(match, `a code reached ${phone}: ${texts.at(-1)}`);
  return match[1]!;
}
