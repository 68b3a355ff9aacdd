import { createApiKey, listApiKeys, revokeApiKey } from '../../services/api-keys.ts';
import { iso } from '../../util/ids.ts';
import { arg, required, type Command } from '../command.ts';
import { table } from '../output.ts';

export const keyCommands: Record<string, Command> = {
  'key create': {
    usage: 'key create ACCOUNT_ID --label L [--scopes a,b]',
    options: { label: 'string', scopes: 'string' },
    async run(ctx, { positionals, values }, out) {
      const created = await createApiKey(ctx, arg(positionals, 0, 'ACCOUNT_ID'), {
        label: required(values.label, '--label'),
        scopes: values.scopes as string | undefined,
      });
      out.print(
        { id: created.id, key: created.key, prefix: created.prefix, scopes: created.scopes },
        `API key ${created.id} (${created.label}), scopes ${created.scopes.join(',')}:\n\n  ${created.key}\n\nThis is the only time the key is shown. Store it now.`,
      );
    },
  },
  'key list': {
    usage: 'key list ACCOUNT_ID',
    async run(ctx, { positionals }, out) {
      const rows = (await listApiKeys(ctx, arg(positionals, 0, 'ACCOUNT_ID'))).map((k) => ({
        id: k.id,
        label: k.label,
        prefix: k.prefix,
        scopes: k.scopes,
        created_at: iso(k.created_at),
        last_used_at: iso(k.last_used_at),
        revoked_at: iso(k.revoked_at),
      }));
      out.print({ data: rows }, table(rows, ['id', 'label', 'prefix', 'created_at', 'last_used_at', 'revoked_at']));
    },
  },
  'key revoke': {
    usage: 'key revoke KEY_ID',
    async run(ctx, { positionals }, out) {
      const key = await revokeApiKey(ctx, arg(positionals, 0, 'KEY_ID'));
      out.print({ id: key.id, revoked_at: iso(key.revoked_at) }, `API key ${key.id} is revoked.`);
    },
  },
};
