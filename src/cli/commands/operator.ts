import { createOperator } from '../../services/auth/operators.ts';
import { resetOperatorTwoFactor } from '../../services/auth/two-factor.ts';
import { arg, required, type Command } from '../command.ts';

export const operatorCommands: Record<string, Command> = {
  'operator create': {
    usage: 'operator create --email E --password P',
    description: "Create an operator's login for the dashboard (/dashboard/operator).",
    options: { email: 'string', password: 'string' },
    optionHelp: { email: 'the login e-mail address', password: 'at least 12 characters' },
    async run(ctx, { values }, out) {
      const op = await createOperator(ctx, required(values.email, '--email'), required(values.password, '--password'));
      out.print(op, `Operator ${op.email} created (${op.id}).`);
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
