/**
 * A dispatch batch slower than its lease (a throttled route, a loaded database) keeps its jobs:
 * the loop holding it renews the lease each half lease, so no other worker claims them while the
 * carrier has the messages and submits them a second time. A lease is taken over only when its
 * holder stops renewing it.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Carrier } from '../../src/carriers/carrier.ts';
import { Dispatcher } from '../../src/services/messages/dispatch-messages.ts';
import { claimJobs, renewLeases } from '../../src/store/repositories/jobs.repository.ts';
import { harness, type Harness } from '../helpers/harness.ts';

describe('dispatch leases', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => {
    await h.close();
  });

  test('a batch held longer than its lease is renewed and not claimed by another worker; submitted once, recorded once', async () => {
    const { key } = await h.customer({ credits: 100 });
    for (let i = 0; i < 3; i++) assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: `+1415555320${i}`, from: 'Acme', message: 'hi' } })).statusCode, 200);
    // The carrier answers only when the test lets it: the batch stays in hand meanwhile.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let entered = 0;
    const slow: Carrier = Object.assign(Object.create(h.carrier) as Carrier, {
      submit: async (messages: Parameters<Carrier['submit']>[0]) => {
        entered++;
        await answered;
        return h.carrier.submit(messages);
      },
    });
    const leaseMs = 300;
    const claimedAt = h.clock.now();
    const jobs = await claimJobs(h.ctx.store.db, 'dispatch', 10, claimedAt, leaseMs);
    assert.equal(jobs.length, 3);
    const dispatching = new Dispatcher(h.ctx, slow, leaseMs).dispatch(jobs, claimedAt);

    // Three leases go by on the clock and in real time: the holder renews at each half.
    for (let i = 0; i < 3; i++) {
      h.clock.advance(leaseMs);
      await sleep(leaseMs);
    }
    const runAts = (await h.ctx.store.db.selectFrom('jobs').select('run_at').where('queue', '=', 'dispatch').execute()).map((j) => Number(j.run_at));
    assert.equal(runAts.length, 3);
    for (const runAt of runAts) assert.ok(runAt > h.clock.now(), `the lease was renewed past now (${runAt - h.clock.now()} ms left)`);
    assert.deepEqual(await claimJobs(h.ctx.store.db, 'dispatch', 10, h.clock.now(), leaseMs), [], 'another worker claims nothing');
    assert.equal(entered, 1);

    answer();
    const summary = await dispatching;
    assert.equal(summary.sent, 3);
    assert.deepEqual([...h.carrier.submitted.values()], [1, 1, 1], 'each message submitted once');
    assert.deepEqual(await h.ctx.store.db.selectFrom('jobs').select('id').where('queue', '=', 'dispatch').execute(), [], 'the jobs are done');
    // No renewal is left running: much later, nothing is claimed or moved.
    await sleep(leaseMs);
    assert.deepEqual(await h.ctx.store.db.selectFrom('jobs').select('id').where('queue', '=', 'dispatch').execute(), []);
  });

  test('a renewal moves only the jobs its claim still holds: one taken over after its lease ran out stays with the new holder', async () => {
    const { key } = await h.customer({ credits: 100 });
    for (let i = 0; i < 2; i++) assert.equal((await h.request('POST', '/v1/sms/send', { key, body: { to: `+1415555330${i}`, from: 'Acme', message: 'hi' } })).statusCode, 200);
    const leaseMs = 1000;
    const claimedAt = h.clock.now();
    const first = await claimJobs(h.ctx.store.db, 'dispatch', 10, claimedAt, leaseMs);
    assert.equal(first.length, 2);
    // One job is taken over by another worker after the first lease ran out.
    await h.ctx.store.db.updateTable('jobs').set({ run_at: claimedAt }).where('id', '=', first[0]!.id).execute();
    const takenAt = claimedAt + 1;
    const taken = await claimJobs(h.ctx.store.db, 'dispatch', 10, takenAt, leaseMs);
    assert.deepEqual(taken.map((j) => j.id), [first[0]!.id]);

    const renewed = await renewLeases(h.ctx.store.db, first.map((j) => j.id), claimedAt + leaseMs, claimedAt + 5 * leaseMs);
    assert.equal(renewed, 1);
    const runAt = new Map((await h.ctx.store.db.selectFrom('jobs').select(['id', 'run_at']).execute()).map((j) => [j.id, Number(j.run_at)]));
    assert.equal(runAt.get(first[0]!.id), takenAt + leaseMs, "the new holder's lease");
    assert.equal(runAt.get(first[1]!.id), claimedAt + 5 * leaseMs, 'renewed');
    assert.equal(await renewLeases(h.ctx.store.db, [], 0, 1), 0);
  });
});
