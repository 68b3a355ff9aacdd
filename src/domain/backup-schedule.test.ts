import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupDue, backupFileName, backupsToRemove, backupTakenAt, scheduledBackups } from './backup-schedule.ts';

const HOUR = 3_600_000;
const at = (iso: string) => Date.parse(iso);

test('a backup is named by the UTC second it was taken, and the name gives that time back', () => {
  const t = at('2026-11-26T15:30:07.456Z');
  assert.equal(backupFileName(t), 'pigeon-20261126T153007Z.db');
  assert.equal(backupTakenAt('pigeon-20261126T153007Z.db'), at('2026-11-26T15:30:07Z'));
});

test('files of other names, or impossible dates, are not backups', () => {
  for (const name of ['pigeon.db', 'notes.txt', 'pigeon-20261126T153007Z.db.partial-42', 'pigeon-20261126T153007Z.db-wal', 'pigeon-20261332T250000Z.db', 'xpigeon-20261126T153007Z.db']) {
    assert.equal(backupTakenAt(name), null, name);
  }
  assert.deepEqual(scheduledBackups(['notes.txt', 'pigeon-20261126T153007Z.db.partial-42']), []);
});

test('the newest BACKUP_KEEP backups are kept, older ones removed, other files never', () => {
  const names = Array.from({ length: 10 }, (_, i) => backupFileName(at('2026-11-01T00:00:00Z') + i * 24 * HOUR));
  const shuffled = [...names].reverse().concat(['keep-me.db', 'pigeon.db']);
  const removed = backupsToRemove(shuffled, 7);
  assert.deepEqual(removed.sort(), names.slice(0, 3).sort(), 'the three oldest go');
  assert.deepEqual(backupsToRemove(names.slice(0, 7), 7), [], 'seven kept: nothing to remove');
  assert.deepEqual(backupsToRemove(names.slice(0, 2), 7), []);
  // A keep of 0 would delete the backup just taken; at least one is always kept.
  assert.deepEqual(backupsToRemove(names, 0), names.slice(0, 9).reverse());
});

test('a backup is due when none exists or the newest is an interval old', () => {
  const t0 = at('2026-11-26T00:00:00Z');
  assert.equal(backupDue([], t0, 24 * HOUR), true);
  assert.equal(backupDue(['unrelated.db'], t0, 24 * HOUR), true);
  const names = [backupFileName(t0 - 48 * HOUR), backupFileName(t0)];
  assert.equal(backupDue(names, t0 + 24 * HOUR - 1000, 24 * HOUR), false);
  assert.equal(backupDue(names, t0 + 24 * HOUR, 24 * HOUR), true);
  // The clock was set back after a backup: one dated far ahead does not hold the schedule up.
  assert.equal(backupDue([backupFileName(t0 + 100 * HOUR)], t0, 6 * HOUR), true);
  assert.equal(backupDue([backupFileName(t0 + 100 * HOUR), backupFileName(t0)], t0 + HOUR, 6 * HOUR), false);
});
