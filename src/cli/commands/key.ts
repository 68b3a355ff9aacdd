import { createApiKey, listApiKeys, revokeApiKey, SCOPES } from '../../services/keys/api-keys.ts';
import { iso } from '../../util/ids.ts';
import { arg, required, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

export const keyCommands: Record<string, Command> = {
  'key create': {
    usage: 'key create ACCOUNT_ID --label L [--scopes a,b]',
    description: 'Create an API key for an account. The key is printed once and stored only as a digest.',
    options: { label: 'string', scopes: 'string' },
    optionHelp: {
      label: 'a name to recognise the key by, e.g. production',
      scopes: `comma-separated scopes (default: every scope): ${SCOPES.join(', ')}`,
    },
    async run(ctx, { positionals, values }, out) {
      const scopes = values.scopes as string | undefined;
      // An empty list must not fall back to every scope: that would grant the most by mistake.
      if (scopes !== undefined && scopes.split(',').every((s) => s.trim() === '')) {
        throw new UsageError(`--scopes needs at least one scope (${SCOPES.join(', ')}); leave --scopes out for every scope.`);
      }
      const created = await createApiKey(ctx, arg(positionals, 0, 'ACCOUNT_ID'), {
        label: required(values.label, '--label'),
        scopes,
      });
      out.print(
        { id: created.id, key: created.key, prefix: created.prefix, scopes: created.scopes },
        `API key ${created.id} (${created.label}), scopes ${created.scopes.join(',')}:\n\n  ${created.key}\n\nThis is the only time the key is shown. Store it now.`,
      );
    },
  },
  'key list': {
    usage: 'key list ACCOUNT_ID',
    description: "List an account's API keys (prefix only: the keys themselves are never stored).",
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
      out.print({ data: rows }, table(rows, ['id', 'label', 'prefix', 'created_at', 'last_used_at', 'revoked_at'], 'API keys'));
    },
  },
  'key revoke': {
    usage: 'key revoke KEY_ID',
    description: 'Revoke an API key by its id (key_..., from `pigeon key list`); effective on the next request.',
    async run(ctx, { positionals }, out) {
      const id = arg(positionals, 0, 'KEY_ID');
      // Never echo a secret key back into a terminal's scrollback or a log.
      if (id.startsWith('pk_')) {
        throw new UsageError(`KEY_ID is the key's id (key_...), not the key itself (${id.slice(0, 12)}...); \`pigeon key list ACCOUNT_ID\` shows the ids with their prefixes.`);
      }
      const key = await revokeApiKey(ctx, id);
      out.print({ id: key.id, revoked_at: iso(key.revoked_at) }, `API key ${key.id} is revoked.`);
    },
  },
};
