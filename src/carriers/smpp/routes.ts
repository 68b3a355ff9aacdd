/** Picks the SMSC connection for a recipient: the longest matching E.164 prefix, else the default. */
import type { SmppRouteConfig } from '../../config/smpp-config.ts';

export function chooseRoute<R extends Pick<SmppRouteConfig, 'prefixes' | 'default'>>(routes: readonly R[], recipient: string): R | null {
  let best: R | null = null;
  let bestLength = -1;
  for (const route of routes) {
    for (const prefix of route.prefixes) {
      if (recipient.startsWith(prefix) && prefix.length > bestLength) {
        best = route;
        bestLength = prefix.length;
      }
    }
  }
  return best ?? routes.find((r) => r.default) ?? null;
}
