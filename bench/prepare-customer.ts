/** Prints the API key of a new bench customer in DATABASE_URL: `node --import tsx bench/prepare-customer.ts`. */
import { prepareCustomer } from './setup.ts';

const { key } = await prepareCustomer(process.env.DATABASE_URL ?? 'sqlite:./data/bench.db');
process.stdout.write(`${key}\n`);
