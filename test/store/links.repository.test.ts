/**
 * Tracked links' queries (migration 034) on each dialect: links written beside their messages, a
 * code already taken drawn again and replaced in its message's text, the one-row read of the
 * redirect, the click counters and the first counted click, a campaign's clicks per hour or day.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LinksTable, MessagesTable } from '../../src/store/database.ts';
import { campaignClicksByTime, countClicks, insertClicks, linkByCode, linksPage } from '../../src/store/repositories/links.repository.ts';
import { writeLinks } from '../../src/services/links/links.ts';
import { forEachDialect } from '../helpers/dialects.ts';
import { addAccount } from './fixtures.ts';

const NOW = 1_750_000_000_000;
const BASE = 'https://127.0.0.1:8443/l';

function message(id: string, body: string, batchId: string | null = null): MessagesTable {
  return {
    id, account_id: 'acc_1', batch_id: batchId, recipient: '+447700900123', sender: 'Acme', body, encoding: 'GSM-7', segments: 1, status: 'pending',
    callback_url: null, carrier_message_id: null, error_code: null, error_message: null, created_at: NOW, sent_at: null, delivered_at: null, updated_at: NOW,
    send_at: null, validity_period: null, expires_at: null,
  };
}

function link(code: string, messageId: string, url: string, batchId: string | null = null): LinksTable {
  return { code, message_id: messageId, batch_id: batchId, account_id: 'acc_1', url, created_at: NOW, clicks: 0, bot_clicks: 0, first_clicked_at: null };
}

describe('links queries', () => {
  forEachDialect((_dialect, open) => {
    it('a code already taken is drawn again, in the link and in its message\'s text, which keeps its length', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await writeLinks(store.db, BASE, [link('AAAAAAAA', 'msg_old', 'https://127.0.0.1/old')], []);
      const messages = [message('msg_a', `Hi ${BASE}/AAAAAAAA and ${BASE}/BBBBBBBB`, 'bat_1'), message('msg_b', `Hi ${BASE}/CCCCCCCC`, 'bat_1')];
      const links = [link('AAAAAAAA', 'msg_a', 'https://127.0.0.1/a', 'bat_1'), link('BBBBBBBB', 'msg_a', 'https://127.0.0.1/b', 'bat_1'), link('CCCCCCCC', 'msg_b', 'https://127.0.0.1/c', 'bat_1')];
      await store.db.transaction().execute((trx) => writeLinks(trx, BASE, links, messages));
      const redrawn = links[0]!.code;
      assert.notEqual(redrawn, 'AAAAAAAA');
      assert.match(redrawn, /^[0-9A-Za-z]{8}$/);
      assert.equal(messages[0]!.body, `Hi ${BASE}/${redrawn} and ${BASE}/BBBBBBBB`);
      assert.equal(messages[1]!.body, `Hi ${BASE}/CCCCCCCC`, 'the other message untouched');
      assert.equal((await linkByCode(store, 'AAAAAAAA'))!.url, 'https://127.0.0.1/old', 'the first holder keeps its code');
      assert.equal((await linkByCode(store, redrawn))!.url, 'https://127.0.0.1/a');
      const page = await linksPage(store.db, 'acc_1', { batchId: 'bat_1' }, 10, 0);
      assert.equal(page.total, 3);
      assert.deepEqual(page.rows.map((r) => r.url).sort(), ['https://127.0.0.1/a', 'https://127.0.0.1/b', 'https://127.0.0.1/c']);
      assert.equal((await linksPage(store.db, 'acc_2', { batchId: 'bat_1' }, 10, 0)).total, 0, 'another account sees none');
    });

    it('clicks: bots counted apart, the first counted click said once, a gone link null', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await writeLinks(store.db, BASE, [link('DDDDDDDD', 'msg_d', 'https://127.0.0.1/d')], []);
      const one = async (code: string, bot: boolean, at: number) => (await countClicks(store.db, [{ code, bot, at }]))[0];
      assert.deepEqual(await one('DDDDDDDD', true, NOW + 1), { first: false, total: 1 });
      assert.deepEqual(await one('DDDDDDDD', false, NOW + 2), { first: true, total: 2 });
      assert.deepEqual(await one('DDDDDDDD', false, NOW + 3), { first: false, total: 3 });
      const [row] = (await linksPage(store.db, 'acc_1', { messageId: 'msg_d' }, 10, 0)).rows;
      assert.deepEqual([Number(row!.clicks), Number(row!.bot_clicks), Number(row!.first_clicked_at)], [2, 1, NOW + 2]);
      assert.equal(await one('ZZZZZZZZ', false, NOW), null);
    });

    it('clicks counted together: per click in order, several on one link, a bot first, a gone link among them', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await writeLinks(store.db, BASE, [link('JJJJJJJJ', 'msg_j', 'https://127.0.0.1/j'), link('KKKKKKKK', 'msg_k', 'https://127.0.0.1/k')], []);
      const counted = await countClicks(store.db, [
        { code: 'JJJJJJJJ', bot: true, at: NOW + 1 },
        { code: 'KKKKKKKK', bot: false, at: NOW + 2 },
        { code: 'ZZZZZZZZ', bot: false, at: NOW + 3 },
        { code: 'JJJJJJJJ', bot: false, at: NOW + 4 },
        { code: 'JJJJJJJJ', bot: false, at: NOW + 5 },
        { code: 'KKKKKKKK', bot: true, at: NOW + 6 },
      ]);
      assert.deepEqual(counted, [
        { first: false, total: 1 },
        { first: true, total: 1 },
        null,
        { first: true, total: 2 },
        { first: false, total: 3 },
        { first: false, total: 2 },
      ]);
      // A later group starts from what the first left.
      assert.deepEqual(await countClicks(store.db, [{ code: 'KKKKKKKK', bot: false, at: NOW + 7 }]), [{ first: false, total: 3 }]);
      const rows = (await linksPage(store.db, 'acc_1', { messageId: 'msg_j' }, 10, 0)).rows.concat((await linksPage(store.db, 'acc_1', { messageId: 'msg_k' }, 10, 0)).rows);
      assert.deepEqual(
        rows.map((r) => [r.code, Number(r.clicks), Number(r.bot_clicks), Number(r.first_clicked_at)]),
        [
          ['JJJJJJJJ', 2, 1, NOW + 4],
          ['KKKKKKKK', 2, 1, NOW + 2],
        ],
      );
      assert.deepEqual(await countClicks(store.db, []), []);
    });

    it('a campaign\'s counted clicks per UTC hour and day, grouped in the database: bots, other campaigns and other accounts left out', async () => {
      const store = await open();
      await addAccount(store, 'acc_1');
      await addAccount(store, 'acc_2');
      const HOUR = 3_600_000;
      const t0 = Date.parse('2026-07-01T09:00:00Z');
      for (const [id, account, campaign] of [['bat_a', 'acc_1', 'cmp_1'], ['bat_b', 'acc_1', 'cmp_1'], ['bat_c', 'acc_1', 'cmp_2'], ['bat_d', 'acc_2', 'cmp_1']] as const) {
        await store.db.insertInto('batches').values({ id, account_id: account, total: 1, queued: 1, credits_used: 1, created_at: t0, campaign_id: campaign }).execute();
      }
      const links = [link('EEEEEEEE', 'msg_e', 'https://127.0.0.1/e', 'bat_a'), link('FFFFFFFF', 'msg_f', 'https://127.0.0.1/f', 'bat_b'), link('GGGGGGGG', 'msg_g', 'https://127.0.0.1/g', 'bat_c'), { ...link('HHHHHHHH', 'msg_h', 'https://127.0.0.1/h', 'bat_d'), account_id: 'acc_2' }];
      await writeLinks(store.db, BASE, links, []);
      const click = (code: string, at: number, bot = 0) => insertClicks(store.db, [{ code, clicked_at: at, user_agent: null, bot }]);
      await click('EEEEEEEE', t0 + 1);
      await click('FFFFFFFF', t0 + HOUR - 1);
      await click('EEEEEEEE', t0 + 2 * HOUR + 5);
      await click('EEEEEEEE', t0 + 2 * HOUR + 6, 1);
      await click('FFFFFFFF', t0 + 26 * HOUR);
      await click('GGGGGGGG', t0 + 10, 0);
      await click('HHHHHHHH', t0 + 10, 0);
      const hours = await campaignClicksByTime(store.db, 'acc_1', 'cmp_1', 3_600_000, t0);
      assert.deepEqual(hours, [
        { bucket: t0 / HOUR, clicks: 2 },
        { bucket: t0 / HOUR + 2, clicks: 1 },
        { bucket: t0 / HOUR + 26, clicks: 1 },
      ]);
      const days = await campaignClicksByTime(store.db, 'acc_1', 'cmp_1', 86_400_000, t0);
      assert.deepEqual(days, [
        { bucket: Math.floor(t0 / 86_400_000), clicks: 3 },
        { bucket: Math.floor(t0 / 86_400_000) + 1, clicks: 1 },
      ]);
      assert.deepEqual(await campaignClicksByTime(store.db, 'acc_1', 'cmp_1', 3_600_000, t0 + 3 * HOUR), [{ bucket: t0 / HOUR + 26, clicks: 1 }], 'from the time given');
      assert.deepEqual(await campaignClicksByTime(store.db, 'acc_2', 'cmp_2', 3_600_000, t0), [], 'another account\'s campaign');
    });
  });
});
