import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MailOutboxTable } from '../../src/store/database.ts';
import { findMail, insertMails, listMails, updateMail } from '../../src/store/repositories/mail-outbox.repository.ts';
import { forEachDialect } from '../helpers/dialects.ts';

function mail(id: string, createdAt: number): MailOutboxTable {
  return { id, to_address: 'owner@example.com', subject: `Subject ${id}`, body_text: 'Body', status: 'queued', attempts: 0, last_error: null, created_at: createdAt, sent_at: null };
}

describe('mail outbox repository', () => {
  forEachDialect((_dialect, open) => {
    it('stores mails and lists them newest first, up to a limit', async () => {
      const store = await open();
      await insertMails(store.db, [mail('mail_1', 1), mail('mail_2', 2), mail('mail_3', 2)]);
      assert.deepEqual(await findMail(store.db, 'mail_1'), mail('mail_1', 1));
      assert.equal(await findMail(store.db, 'mail_none'), undefined);
      assert.deepEqual((await listMails(store.db, 2)).map((m) => m.id), ['mail_3', 'mail_2']);
    });

    it('records a failed attempt, then the send, changing only what it is given', async () => {
      const store = await open();
      await insertMails(store.db, [mail('mail_1', 1)]);
      await updateMail(store.db, 'mail_1', { status: 'queued', attempts: 1, last_error: 'refused' });
      assert.deepEqual(await findMail(store.db, 'mail_1'), { ...mail('mail_1', 1), attempts: 1, last_error: 'refused' });
      await updateMail(store.db, 'mail_1', { status: 'sent', attempts: 2, sent_at: 50, last_error: null });
      assert.deepEqual(await findMail(store.db, 'mail_1'), { ...mail('mail_1', 1), status: 'sent', attempts: 2, sent_at: 50 });
      await updateMail(store.db, 'mail_1', { status: 'held' });
      assert.equal((await findMail(store.db, 'mail_1'))?.attempts, 2);
    });
  });
});
