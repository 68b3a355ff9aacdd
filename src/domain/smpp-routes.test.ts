import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../errors/catalogue.ts';
import { DEFAULT_FAILOVER_CODES, checkRouteName, parseFailoverCodes, parsePrefixes, routeCandidates, routeFields } from './smpp-routes.ts';

test('candidates: the longest matching prefix first, then the highest priority, then the name; + matches all', () => {
  const routes = [
    { name: 'world', prefixes: ['+'], priority: 0 },
    { name: 'uk-b', prefixes: ['+44'], priority: 1 },
    { name: 'uk-a', prefixes: ['+44'], priority: 5 },
    { name: 'uk-mobile', prefixes: ['+447', '+353'], priority: 0 },
    { name: 'uk-c', prefixes: ['+44'], priority: 1 },
  ];
  assert.deepEqual(routeCandidates(routes, '+447911123456').map((r) => r.name), ['uk-mobile', 'uk-a', 'uk-b', 'uk-c', 'world']);
  assert.deepEqual(routeCandidates(routes, '+442071234567').map((r) => r.name), ['uk-a', 'uk-b', 'uk-c', 'world']);
  assert.deepEqual(routeCandidates(routes, '+33612345678').map((r) => r.name), ['world']);
  assert.deepEqual(routeCandidates(routes.slice(1), '+33612345678'), []);
});

test('prefixes, failover codes and names are checked; a bad one is invalid_request', () => {
  assert.deepEqual(parsePrefixes(' +44, +353 ,+44'), ['+44', '+353']);
  assert.deepEqual(parsePrefixes('+'), ['+']);
  assert.deepEqual(parseFailoverCodes('0x08, 0x45,20'), [8, 0x45, 20]);
  assert.deepEqual(parseFailoverCodes(''), []);
  for (const bad of [() => parsePrefixes('44'), () => parsePrefixes(''), () => parsePrefixes('+1234567890123456'), () => parseFailoverCodes('0xZZ'), () => parseFailoverCodes('0'), () => checkRouteName('a b')]) {
    assert.throws(bad, (err: unknown) => err instanceof AppError && err.code === 'invalid_request');
  }
});

test('a new route needs its address and credentials; an update keeps what it does not name', () => {
  assert.throws(() => routeFields({ prefixes: '+44', host: 'h' }, null), /--port|--system-id/);
  const made = routeFields({ prefixes: '+44', host: '127.0.0.1', port: '2775', systemId: 'pigeon', password: 'secret' }, null);
  assert.deepEqual(made, {
    prefixes: ['+44'],
    host: '127.0.0.1',
    port: 2775,
    systemId: 'pigeon',
    password: 'secret',
    systemType: '',
    tps: 0,
    window: 10,
    priority: 0,
    costPerSegment: null,
    failoverCodes: [...DEFAULT_FAILOVER_CODES],
  });
  const changed = routeFields({ priority: '7', costPerSegment: '3' }, made);
  assert.deepEqual({ ...changed, priority: 0, costPerSegment: null }, made);
  assert.equal(changed.priority, 7);
  assert.equal(changed.costPerSegment, 3);
  assert.equal(routeFields({ costPerSegment: '' }, changed).costPerSegment, null);
  assert.throws(() => routeFields({ password: '123456789' }, made), /at most 8/);
  assert.throws(() => routeFields({ port: '70000' }, made), /--port/);
});
