import { createOperator, listOperators, setOperatorRole } from '../../services/auth/operators.ts';
import { resetOperatorTwoFactor } from '../../services/auth/two-factor.ts';
import { arg, required, UsageError, type Command } from '../command.ts';

const ROLE_HELP = 'admin (everything), support (Sender ID review, reading accounts, messages and binds, suspending), finance (credits, rate cards, margin and usage)';

export const operatorCommands: Record<string, Command> = {
  'operator create': {
    usage: 'operator create [EMAIL] --password P [--role admin|support|finance] [--email E]',
    description: "Create an operator's login for the console (/operator), with a role (default admin).",
    options: { email: 'string', password: 'string', role: 'string' },
    optionHelp: { email: 'the login e-mail address (or give it as EMAIL)', password: 'at least 12 characters', role: ROLE_HELP },
    async run(ctx, { positionals, values }, out) {
      const email = positionals[0] ?? (typeof values.email === 'string' ? values.email : undefined);
      if (!email) throw new UsageError('EMAIL (or --email) is required.');
      const role = typeof values.role === 'string' ? values.role : undefined;
      const op = await createOperator(ctx, email, required(values.password, '--password'), role);
      out.print(op, `Operator ${op.email} created (${op.id}), role ${op.role}.`);
    },
  },
  'operator role': {
    usage: 'operator role EMAIL --role admin|support|finance',
    description: "Change an operator's role; their next page is checked against it.",
    options: { role: 'string' },
    optionHelp: { role: ROLE_HELP },
    async run(ctx, { positionals, values }, out) {
      const op = await setOperatorRole(ctx, arg(positionals, 0, 'EMAIL'), required(values.role, '--role'));
      out.print(op, `Operator ${op.email} is now ${op.role}.`);
    },
  },
  'operator list': {
    usage: 'operator list',
    description: 'List the operators and their roles.',
    async run(ctx, _args, out) {
      const data = await listOperators(ctx);
      out.print({ data }, data.length === 0 ? 'No operators.' : data.map((o) => `${o.id}  ${o.email}  ${o.role}`).join('\n'));
    },
  },
  'operator reset-2fa': {
    usage: 'operator reset-2fa EMAIL',
    description: "Turn an operator's two-factor sign-in off (a lost authenticator) and end their sessions; they set it up again at the next sign-in.",
    async run(ctx, { positionals }, out) {
      const op = await resetOperatorTwoFactor(ctx, arg(positionals, 0, 'EMAIL'));
      out.print(op, `Two-factor of operator ${op.email} reset; their sessions have ended.`);
    },
  },
};
