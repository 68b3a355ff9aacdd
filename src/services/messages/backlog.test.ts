import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../errors/catalogue.ts';
import type { Store } from '../../store/connect.ts';
import type { DispatchBacklog } from '../../store/repositories/jobs.repository.ts';
import type { Context } from '../context.ts';
import { checkBacklog, nextDrainRate, retryAfterSeconds, type BacklogReader } from './backlog.ts';

test('retryAfterSeconds: the excess over the rate, rounded up, between 1 and 60 s; 5 s before any rate; 60 s at a rate of 0', () => {
  assert.equal(retryAfterSeconds(100, null), 5);
  assert.equal(retryAfterSeconds(100, 0), 60);
  assert.equal(retryAfterSeconds(100, 50), 2);
  assert.equal(retryAfterSeconds(101, 50), 3);
  assert.equal(retryAfterSeconds(20, 5), 4);
  assert.equal(retryAfterSeconds(1, 1000), 1, 'never under a second');
  assert.equal(retryAfterSeconds(0, 1000), 1);
  assert.equal(retryAfterSeconds(10_000, 10), 60, 'never over a minute');
});

const T = 1_000_000;

test('nextDrainRate: none before two readings; the first sample is the rate, later ones are averaged', () => {
  assert.equal(nextDrainRate({ depth: 40, at: -Infinity, rate: null }, 0, T), null, 'no earlier reading');
  assert.equal(nextDrainRate({ depth: 40, at: T, rate: 7 }, 10, T), 7, 'no time between the readings');
  // 40 waiting, 30 left 2 s later: 10 worked off in 2 s.
  assert.equal(nextDrainRate({ depth: 40, at: T - 2000, rate: null }, 30, T), 5);
  assert.equal(nextDrainRate({ depth: 40, at: T - 2000, rate: 15 }, 30, T), 10);
  assert.equal(nextDrainRate({ depth: 40, at: T - 1000, rate: 10 }, 40, T), 5, 'nothing worked off while work waited: dispatch is slow or stopped');
  assert.equal(nextDrainRate({ depth: 40, at: T - 1000, rate: 10 }, 45, T), 5, 'more of the old jobs than counted (committed after the reading) is no negative rate');
});

test('nextDrainRate: a reading of an empty backlog says nothing of the rate', () => {
  assert.equal(nextDrainRate({ depth: 0, at: T - 1000, rate: null }, 0, T), null);
  assert.equal(nextDrainRate({ depth: 0, at: T - 60_000, rate: 200 }, 0, T), 200, 'a quiet minute leaves the rate as it was');
});

test('nextDrainRate: a backlog worked off entirely only raises the rate (dispatch may have idled after)', () => {
  assert.equal(nextDrainRate({ depth: 100, at: T - 10_000, rate: 200 }, 0, T), 200, '100 gone in 10 s at 200/s: it idled most of the time');
  assert.equal(nextDrainRate({ depth: 100, at: T - 1000, rate: 20 }, 0, T), 100, 'at least 100/s, whatever was measured before');
  assert.equal(nextDrainRate({ depth: 100, at: T - 10_000, rate: null }, 0, T), 10, 'a lower bound is better than none');
});

/** A context and a backlog reader whose counts the test sets, over a clock the test moves. */
function fake(limit = 100, sharePercent = 40) {
  let now = T;
  const backlog = new Map<string, DispatchBacklog>();
  const reads: string[] = [];
  const ctx = {
    store: {} as Store,
    clock: () => now,
    config: { dispatchBacklogLimit: limit, dispatchBacklogAccountShare: sharePercent },
  } as unknown as Context;
  const read: BacklogReader = async (_now, _since, accountId) => {
    reads.push(accountId ?? 'all');
    return backlog.get(accountId ?? 'all') ?? { depth: 0, createdBy: 0, oldestCreatedAt: null };
  };
  return {
    ctx,
    read,
    reads,
    set(key: string, depth: number, createdBy = depth) {
      backlog.set(key, { depth, createdBy, oldestCreatedAt: depth > 0 ? T : null });
    },
    advance(ms: number) {
      now += ms;
    },
  };
}

async function outcome(p: Promise<unknown>): Promise<number | string> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

test('checkBacklog: concurrent requests on one reading count what the ones before them admitted', async () => {
  const f = fake();
  // Share: 40 % of 100. Twenty bulks of 10 at once, nothing waiting in the database.
  const results = await Promise.all(Array.from({ length: 20 }, () => outcome(checkBacklog(f.ctx, 'acc_a', 10, f.read))));
  assert.equal(results.filter((r) => r === 200).length, 4, 'four bulks of 10 fill the share of 40');
  assert.ok(results.slice(4).every((r) => r === 'rate_limit_exceeded'));
  assert.deepEqual(f.reads, ['all', 'acc_a'], 'one reading each for the burst');

  // Another account fills the rest of the service's limit, then is refused with 503.
  const b = await Promise.all(Array.from({ length: 10 }, () => outcome(checkBacklog(f.ctx, 'acc_b', 10, f.read))));
  assert.deepEqual(b, [200, 200, 200, 200, 'rate_limit_exceeded', 'rate_limit_exceeded', 'rate_limit_exceeded', 'rate_limit_exceeded', 'rate_limit_exceeded', 'rate_limit_exceeded']);
  const c = await Promise.all(Array.from({ length: 4 }, () => outcome(checkBacklog(f.ctx, 'acc_c', 10, f.read))));
  assert.deepEqual(c, [200, 200, 'service_unavailable', 'service_unavailable'], '80 admitted + 20 = the limit of 100');
});

test('checkBacklog: an account with nothing waiting may send one request of any size, only one', async () => {
  const f = fake();
  const results = await Promise.all(Array.from({ length: 5 }, () => outcome(checkBacklog(f.ctx, 'acc_a', 50, f.read))));
  assert.deepEqual(results, [200, 'rate_limit_exceeded', 'rate_limit_exceeded', 'rate_limit_exceeded', 'rate_limit_exceeded']);
});

test('checkBacklog: a fresh reading replaces what was admitted, except acceptances still running when it was taken', async () => {
  const f = fake();
  const finished = await checkBacklog(f.ctx, 'acc_a', 30, f.read);
  const running = await checkBacklog(f.ctx, 'acc_a', 10, f.read);
  finished();
  assert.equal(await outcome(checkBacklog(f.ctx, 'acc_a', 1, f.read)), 'rate_limit_exceeded', 'the share of 40 is admitted');

  // A second later the database holds the finished 30; the 10 still being accepted may not be
  // in it yet, so they stay counted.
  f.advance(1000);
  f.set('acc_a', 30);
  f.set('all', 30);
  assert.equal(await outcome(checkBacklog(f.ctx, 'acc_a', 1, f.read)), 'rate_limit_exceeded');
  running();
  const refused = await outcome(checkBacklog(f.ctx, 'acc_a', 10, f.read));
  assert.equal(refused, 'rate_limit_exceeded', 'a finished acceptance stays counted until the next reading');

  // The next reading has them all, and what the refused requests did not take is free again.
  f.advance(1000);
  f.set('acc_a', 39);
  f.set('all', 39);
  assert.equal(await outcome(checkBacklog(f.ctx, 'acc_a', 1, f.read)), 200);
  assert.equal(await outcome(checkBacklog(f.ctx, 'acc_a', 1, f.read)), 'rate_limit_exceeded');
});

test('checkBacklog: Retry-After is the excess over the share at the rate measured from the database readings', async () => {
  const f = fake();
  f.set('acc_a', 40);
  f.set('all', 40);
  (await checkBacklog(f.ctx, 'acc_a', 0, f.read))();
  // 2 s later 30 of the 40 are left, and 10 new ones waiting since count in the depth only.
  f.advance(2000);
  f.set('acc_a', 40, 30);
  f.set('all', 40, 30);
  const refused = await checkBacklog(f.ctx, 'acc_a', 20, f.read).then(
    () => assert.fail('admitted over the share'),
    (err: AppError) => err,
  );
  assert.equal(refused.code, 'rate_limit_exceeded');
  // 40 waiting + 20 asked - 40 allowed = 20 to work off, at 10 in 2 s: 4 s.
  assert.equal(refused.headers?.['Retry-After'], '4');
  assert.equal(refused.headers?.['RateLimit-Remaining'], '0');
});
