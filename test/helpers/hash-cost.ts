/**
 * Imported for its effect by the in-process helpers (harness, the dashboard client, the SMPP
 * server fixture): new password hashes in this process use scrypt at N=2^10 instead of 2^17.
 * Sign-ups, logins and the throttles behave the same at any cost, and the suite signs up some 250
 * times on each database; src/services/auth/passwords.test.ts checks the production cost, and
 * real `pigeon` processes (the CLI, the browser tests) always hash at it.
 */
import { hashCost } from '../../src/services/auth/passwords.ts';

hashCost.N = 2 ** 10;
