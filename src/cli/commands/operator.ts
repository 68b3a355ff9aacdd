import { createOperator } from '../../services/operators.ts';
import { required, type Command } from '../command.ts';

export const operatorCommands: Record<string, Command> = {
  'operator create': {
    usage: 'operator create --email E --password P',
    options: { email: 'string', password: 'string' },
    async run(ctx, { values }, out) {
      const op = await createOperator(ctx, required(values.email, '--email'), required(values.password, '--password'));
      out.print(op, `Operator ${op.email} created (${op.id}).`);
    },
  },
};
