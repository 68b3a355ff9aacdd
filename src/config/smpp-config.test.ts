import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config.ts';

const base = { CARRIER: 'smpp', SMPP_HOST: 'smsc.example.net', SMPP_SYSTEM_ID: 'pigeon', SMPP_PASSWORD: 'pw' };

test('one SMSC from SMPP_*: the default route, with defaults for the rest', () => {
  const { smpp } = loadConfig(base);
  assert.deepEqual(smpp.routes, [
    { name: 'default', prefixes: [], default: true, host: 'smsc.example.net', port: 2775, systemId: 'pigeon', password: 'pw', systemType: '', tps: 0, window: 10 },
  ]);
  assert.equal(smpp.validityHours, 48);
  assert.equal(loadConfig({ ...base, SMPP_VALIDITY_HOURS: '72', SMPP_TPS: '50', SMPP_WINDOW: '20' }).smpp.routes[0]!.window, 20);
});

test('SMPP_ROUTES adds prefix routes that inherit what they leave out; SMPP_ROUTES_FILE works the same', () => {
  const routes = [{ name: 'uk', prefixes: ['+44'], host: 'uk.example.net', system_id: 'uk', tps: 5 }];
  const { smpp } = loadConfig({ ...base, SMPP_ROUTES: JSON.stringify(routes) });
  assert.equal(smpp.routes.length, 2);
  assert.deepEqual(smpp.routes[0], { name: 'uk', prefixes: ['+44'], default: false, host: 'uk.example.net', port: 2775, systemId: 'uk', password: 'pw', systemType: '', tps: 5, window: 10 });
  assert.equal(smpp.routes[1]!.name, 'default');
  const file = join(mkdtempSync(join(tmpdir(), 'pigeon-')), 'routes.json');
  writeFileSync(file, JSON.stringify([...routes, { name: 'rest', host: 'rest.example.net', system_id: 'r' }]));
  const fromFile = loadConfig({ CARRIER: 'smpp', SMPP_ROUTES_FILE: file }).smpp.routes;
  assert.deepEqual(fromFile.map((r) => [r.name, r.default]), [['uk', false], ['rest', true]]);
});

test('mistakes fail at start with the variable named', () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ ...base, SMPP_PORT: 'x' }, /SMPP_PORT/],
    [{ ...base, SMPP_ROUTES: '{' }, /SMPP_ROUTES must be a JSON array/],
    [{ ...base, SMPP_ROUTES: '[{"prefixes":["44"]}]' }, /E\.164 prefixes/],
    [{ ...base, SMPP_ROUTES: '[{"name":"a"},{"name":"b"}]' }, /exactly one default/],
    [{ CARRIER: 'smpp', SMPP_ROUTES: '[{"host":"h"}]' }, /no system_id/],
    [{ CARRIER: 'smpp', SMPP_ROUTES_FILE: '/nonexistent/routes.json' }, /SMPP_ROUTES_FILE/],
  ];
  for (const [env, message] of bad) assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
});

test('CARRIER=smpp without SMPP_HOST or SMPP_ROUTES: no routes from the environment (the database has them)', () => {
  assert.deepEqual(loadConfig({ CARRIER: 'smpp' }).smpp.routes, []);
});

test('a route may give its priority, cost_per_segment and failover_codes', () => {
  const routes = [{ name: 'uk', prefixes: ['+44'], priority: 5, cost_per_segment: 2, failover_codes: ['0x45', 8] }];
  const [uk] = loadConfig({ ...base, SMPP_ROUTES: JSON.stringify(routes) }).smpp.routes;
  assert.equal(uk!.priority, 5);
  assert.equal(uk!.costPerSegment, 2);
  assert.deepEqual(uk!.failoverCodes, [0x45, 8]);
  assert.throws(() => loadConfig({ ...base, SMPP_ROUTES: JSON.stringify([{ name: 'uk', prefixes: ['+44'], failover_codes: ['x'] }]) }), /failover_codes|command_status/);
});

test('the simulator ignores SMPP routes', () => {
  assert.deepEqual(loadConfig({ SMPP_ROUTES: '{' }).smpp.routes, []);
});
