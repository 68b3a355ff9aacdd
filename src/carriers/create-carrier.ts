import type { Config } from '../config/config.ts';
import { ConfigError } from '../config/config.ts';
import type { Clock } from '../util/ids.ts';
import type { Carrier } from './carrier.ts';
import { SimulatorCarrier } from './simulator/simulator-carrier.ts';

/** The carrier named by CARRIER. */
export function createCarrier(config: Config, clock: Clock): Carrier {
  switch (config.carrier) {
    case 'simulator':
      return new SimulatorCarrier(config.simulator.deliveryDelayMs, clock);
    case 'smpp':
      throw new ConfigError('CARRIER=smpp: the SMPP connector is not part of this build yet; use CARRIER=simulator.');
  }
}
