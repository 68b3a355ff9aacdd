import pino, { type Logger } from 'pino';
import type { Config } from '../config/config.ts';
import type { Clock } from '../util/ids.ts';
import type { Carrier } from './carrier.ts';
import { SimulatorCarrier } from './simulator/simulator-carrier.ts';
import { SmppCarrier } from './smpp/smpp-carrier.ts';

/**
 * The carrier named by CARRIER. Nothing connects until `start()`, which only processes that run
 * workers call.
 */
export function createCarrier(config: Config, clock: Clock, log: Logger = pino({ level: 'silent' })): Carrier {
  switch (config.carrier) {
    case 'simulator':
      return new SimulatorCarrier(config.simulator.deliveryDelayMs, clock, false, config.simulator.logFile);
    case 'smpp':
      return new SmppCarrier(config.smpp, log.child({ component: 'smpp' }), clock);
  }
}
