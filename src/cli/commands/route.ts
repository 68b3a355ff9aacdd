import type { RouteInput } from '../../domain/smpp-routes.ts';
import { addRoute, getRoute, listRoutes, removeRoute, updateRoute, type Route, type RouteWithState } from '../../services/routes/routes.ts';
import { iso } from '../../util/ids.ts';
import { arg, UsageError, type Command } from '../command.ts';
import { table } from '../output.ts';

const FIELD_OPTIONS = {
  prefixes: 'string',
  host: 'string',
  port: 'string',
  'system-id': 'string',
  password: 'string',
  'system-type': 'string',
  tps: 'string',
  window: 'string',
  priority: 'string',
  'cost-per-segment': 'string',
  'failover-codes': 'string',
} as const;

const FIELD_HELP = {
  prefixes: 'comma-separated E.164 prefixes it serves, such as +44,+353 (+ alone: every recipient)',
  host: "the SMSC's address",
  port: "the SMSC's port (default 2775)",
  'system-id': 'system_id to bind with (up to 15 characters)',
  password: 'password to bind with (up to 8 characters; stored to bind, never shown)',
  'system-type': 'system_type to bind with (default empty)',
  tps: 'submits per second at most (default 0: no cap)',
  window: 'submits sent and not yet answered at most (default 10)',
  priority: 'among routes with the same matching prefix, the higher is tried first (default 0)',
  'cost-per-segment': 'credits the carrier charges you per segment, for the margin report (empty: not recorded)',
  'failover-codes': 'command_status values that send the message on to the next route (default 0x08,0x14,0x45,0x58)',
};

function input(values: Record<string, string | boolean | undefined>): RouteInput {
  const v = (name: keyof typeof FIELD_OPTIONS): string | undefined => {
    const value = values[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw new UsageError(`--${name} needs a value.`);
    return value;
  };
  const out: RouteInput = {};
  const set = <K extends keyof RouteInput>(key: K, value: string | undefined) => {
    if (value !== undefined) out[key] = value as RouteInput[K];
  };
  set('prefixes', v('prefixes'));
  set('host', v('host'));
  set('port', v('port'));
  set('systemId', v('system-id'));
  set('password', v('password'));
  set('systemType', v('system-type'));
  set('tps', v('tps'));
  set('window', v('window'));
  set('priority', v('priority'));
  set('costPerSegment', v('cost-per-segment'));
  set('failoverCodes', v('failover-codes'));
  return out;
}

function shown(r: Route) {
  return { ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) };
}

function listed(r: RouteWithState) {
  return { ...shown(r), bound: r.bound, links: r.links.map((l) => ({ state: l.state, last_error: l.last_error, seen_at: iso(l.seen_at) })) };
}

function describe(r: Pick<Route, 'name' | 'prefixes' | 'host' | 'port' | 'system_id' | 'priority' | 'cost_per_segment' | 'failover_codes'>, what: string): string {
  return `${what} ${r.name}: ${r.prefixes.join(',')} over ${r.host}:${r.port} as ${r.system_id}, priority ${r.priority}, cost per segment ${r.cost_per_segment ?? 'not recorded'}, failover on ${r.failover_codes.join(',') || 'nothing'}.${what === 'Route' ? '' : ' Worker processes take it within 2 seconds.'}`;
}

export const routeCommands: Record<string, Command> = {
  'route list': {
    usage: 'route list',
    description:
      'List the SMPP routes, each with whether a worker process has it bound. With --json: {"data":[{"name","prefixes","priority","bound",...}]} (never the password).',
    async run(ctx, _args, out) {
      const data = (await listRoutes(ctx)).map(listed);
      const rows = data.map((r) => ({
        ...r,
        prefixes: r.prefixes.join(','),
        address: `${r.host}:${r.port}`,
        bound: r.bound ? 'yes' : r.links.length === 0 ? 'no (no worker running)' : `no (${r.links.find((l) => l.last_error)?.last_error ?? r.links[0]!.state})`,
        cost_per_segment: r.cost_per_segment ?? '-',
        failover_codes: r.failover_codes.join(','),
      }));
      out.print({ data }, table(rows, ['name', 'prefixes', 'priority', 'address', 'system_id', 'tps', 'window', 'cost_per_segment', 'failover_codes', 'bound'], 'routes'));
    },
  },
  'route show': {
    usage: 'route show NAME',
    description: 'Show one SMPP route with the state of its link in each worker process (never the password).',
    async run(ctx, { positionals }, out) {
      const r = listed(await getRoute(ctx, arg(positionals, 0, 'NAME')));
      out.print(r, [describe(r, 'Route'), `Bound: ${r.bound ? 'yes' : 'no'}`, ...r.links.map((l) => `  link ${l.state}${l.last_error ? ` (${l.last_error})` : ''}, seen ${l.seen_at}`)].join('\n'));
    },
  },
  'route add': {
    usage:
      'route add NAME --prefixes +44,+353 --host H --port P --system-id ID --password PW [--system-type T] [--tps N] [--window N] [--priority N] [--cost-per-segment N] [--failover-codes 0x08,0x14]',
    description: 'Add an SMPP route. Every worker process binds to it within 2 seconds, without a restart.',
    options: FIELD_OPTIONS,
    optionHelp: FIELD_HELP,
    async run(ctx, { positionals, values }, out) {
      const r = await addRoute(ctx, arg(positionals, 0, 'NAME'), input(values));
      out.print(shown(r), describe(r, 'Added route'));
    },
  },
  'route update': {
    usage:
      'route update NAME [--prefixes +44,+353] [--host H] [--port P] [--system-id ID] [--password PW] [--system-type T] [--tps N] [--window N] [--priority N] [--cost-per-segment N] [--failover-codes 0x08,0x14]',
    description:
      'Change an SMPP route: only the flags given change. A new address or new credentials bind again; other changes apply to the bound link. A new cost per segment applies to messages from then on.',
    options: FIELD_OPTIONS,
    optionHelp: FIELD_HELP,
    async run(ctx, { positionals, values }, out) {
      const changes = input(values);
      if (Object.keys(changes).length === 0) throw new UsageError('Give at least one flag to change.');
      const r = await updateRoute(ctx, arg(positionals, 0, 'NAME'), changes);
      out.print(shown(r), describe(r, 'Updated route'));
    },
  },
  'route remove': {
    usage: 'route remove NAME',
    description: 'Remove an SMPP route. Worker processes unbind from it within 2 seconds; what waited for it goes to the remaining routes.',
    async run(ctx, { positionals }, out) {
      const r = await removeRoute(ctx, arg(positionals, 0, 'NAME'));
      out.print({ name: r.name, removed: true }, `Route ${r.name} is removed.`);
    },
  },
};
