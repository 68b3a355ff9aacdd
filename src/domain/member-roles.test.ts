import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DASHBOARD_REQUIREMENTS, requirementOfPath, roleMeets } from './member-roles.ts';

test('a concrete path finds its route in the table: exact routes first, then `:id` as one segment', () => {
  assert.equal(requirementOfPath('POST', '/settings/api-keys'), 'developer');
  assert.equal(requirementOfPath('POST', '/settings/api-keys/key_01abc/revoke'), 'developer');
  assert.equal(requirementOfPath('POST', '/settings/team/require-2fa'), 'owner');
  assert.equal(requirementOfPath('POST', '/settings/team/own_1/remove'), 'owner');
  assert.equal(requirementOfPath('POST', '/settings/api-keys/a/b/revoke'), undefined, 'a parameter is one segment');
  assert.equal(requirementOfPath('POST', '/nowhere'), undefined);
  assert.equal(requirementOfPath('DELETE', '/settings/api-keys'), undefined);
  // Every route of the table is found from a path made of it.
  for (const [route, requirement] of Object.entries(DASHBOARD_REQUIREMENTS)) {
    const [method, path] = route.split(' ') as [string, string];
    const concrete = path.replace(/:[A-Za-z]+/g, 'x_1');
    const found = requirementOfPath(method, concrete);
    assert.ok(found !== undefined, route);
    // Where two routes match one path (`/team/require-2fa` and `/team/:id/...` do not), the exact one wins.
    if (!path.includes(':')) assert.equal(found, requirement, route);
  }
  assert.equal(roleMeets('viewer', 'read'), true);
  assert.equal(roleMeets('viewer', 'developer'), false);
});
