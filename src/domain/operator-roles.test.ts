import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_PERMISSIONS, roleMay } from './operator-roles.ts';

describe('operator roles', () => {
  it('gives admin every permission', () => {
    for (const p of OPERATOR_PERMISSIONS) assert.equal(roleMay('admin', p), true, p);
  });

  it('lets support review Sender IDs, read accounts, messages and binds, and suspend, but not touch money or routes', () => {
    for (const p of ['sender_ids.review', 'accounts.read', 'accounts.suspend', 'messages.read', 'binds.read'] as const) assert.equal(roleMay('support', p), true, p);
    for (const p of ['credits.add', 'rate_cards.import', 'routes.manage', 'operators.manage', 'erasures.manage', 'margin.read'] as const) assert.equal(roleMay('support', p), false, p);
  });

  it('lets finance add credits, import rate cards, read margin and usage, but not review or suspend', () => {
    for (const p of ['credits.add', 'rate_cards.import', 'margin.read', 'usage.read', 'accounts.read'] as const) assert.equal(roleMay('finance', p), true, p);
    for (const p of ['sender_ids.review', 'accounts.suspend', 'routes.manage', 'operators.manage', 'erasures.manage', 'messages.read'] as const) assert.equal(roleMay('finance', p), false, p);
  });

  it('refuses everything to a role it does not know', () => {
    assert.equal(roleMay('root', 'console'), false);
    assert.equal(roleMay('', 'console'), false);
  });
});
