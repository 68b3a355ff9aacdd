import { createOperator } from '../../services/auth/operators.ts';
import { required, type Command } from '../command.ts';

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
};
