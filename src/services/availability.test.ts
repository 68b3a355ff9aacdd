import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { StoreCondition } from '../store/condition.ts';
import type { Store } from '../store/connect.ts';
import { waitFor } from '../../test/helpers/wait-for.ts';
import { logStoreCondition } from './availability.ts';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

test('an outage that comes and goes in its first moments is one error line, and its end one info line once the store has held', async () => {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const condition = new StoreCondition();
  logStoreCondition({ dialect: 'postgres', condition } as unknown as Store, log, 60_000, 50);
  for (let i = 0; i < 5; i++) {
    condition.observe(refused());
    condition.recovered();
  }
  assert.deepEqual(
    lines.map((l) => l.level),
    [50],
  );
  await waitFor(() => lines.length === 2, { timeout: 2000 });
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [
      [50, 'store unavailable: the database is unreachable; requests get 503 until it recovers'],
      [30, 'store available again'],
    ],
  );
  // A new outage after that is a new line.
  condition.observe(refused());
  assert.equal(lines.length, 3);
});
