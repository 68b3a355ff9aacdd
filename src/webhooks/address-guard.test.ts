import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressBlock, classifyAddress, inRanges, isAllowedTarget, isLoopbackAddress, isReservedName } from './address-guard.ts';

test('IPv4 classes', () => {
  const cases: [string, string][] = [
    ['8.8.8.8', 'public'],
    ['93.184.215.14', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.1', 'public'],
    ['100.100.100.200', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['198.18.0.1', 'reserved'],
  ];
  for (const [ip, cls] of cases) assert.equal(classifyAddress(ip), cls, ip);
});

test('IPv6 classes, including IPv4 carried inside IPv6', () => {
  const cases: [string, string][] = [
    ['2606:4700:4700::1111', 'public'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:8.8.8.8', 'public'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:0808:0808::1', 'public'],
    ['2001:db8::1', 'reserved'],
  ];
  for (const [ip, cls] of cases) assert.equal(classifyAddress(ip), cls, ip);
});

test('every IPv4-in-IPv6 form is judged by its IPv4 address, the IPv4-translated ::ffff:0:0:0/96 included', () => {
  const loopbackForms = [
    '::ffff:127.0.0.1', // mapped
    '::ffff:7f00:1',
    '::ffff:0:127.0.0.1', // translated (SIIT)
    '::ffff:0:7f00:1',
    '0:0:0:0:ffff:0:7f00:1',
    '::FFFF:0:127.0.0.2',
    '::127.0.0.1', // compatible
    '64:ff9b::127.0.0.1', // NAT64
    '2002:7f00:1::', // 6to4
  ];
  for (const ip of loopbackForms) {
    assert.equal(classifyAddress(ip), 'loopback', ip);
    assert.equal(isAllowedTarget(ip, false), false, ip);
  }
  // Local-use NAT64 and Teredo carry an IPv4 address that cannot be read off reliably: refused.
  assert.equal(isAllowedTarget('64:ff9b:1::7f00:1', false), false);
  assert.equal(isAllowedTarget('2001:0:7f00:1::', false), false);
});

test('only public addresses are allowed, unless private targets are allowed; garbage never is', () => {
  assert.equal(isAllowedTarget('8.8.8.8', false), true);
  assert.equal(isAllowedTarget('127.0.0.1', false), false);
  assert.equal(isAllowedTarget('127.0.0.1', true), true);
  assert.equal(isAllowedTarget('not-an-ip', true), false);
  assert.equal(classifyAddress('1.2.3'), 'invalid');
  assert.equal(classifyAddress('1.2.3.256'), 'invalid');
});

test('special-use names are recognised', () => {
  for (const n of ['localhost', 'api.localhost', 'hooks.example.com', 'example.org', 'x.test', 'a.b.invalid', 'printer.local', 'HOOKS.EXAMPLE.COM.']) {
    assert.equal(isReservedName(n), true, n);
  }
  for (const n of ['hooks.acme.com', 'example.co.uk', 'notexample.com', 'testing.io']) assert.equal(isReservedName(n), false, n);
});

test('client address blocks: IPv4 as is (also when mapped into IPv6), IPv6 by its /64, other text cut short', () => {
  assert.equal(addressBlock('127.0.0.1'), '127.0.0.1');
  assert.equal(addressBlock('::ffff:127.0.0.9'), '127.0.0.9');
  assert.equal(addressBlock('::1'), '0:0:0:0::/64');
  assert.equal(addressBlock('0:0:0:0:0:0:0:1'), '0:0:0:0::/64');
  assert.equal(addressBlock('x'.repeat(10_000)).length, 64);
});

test('loopback peers and TRUST_PROXY ranges', () => {
  for (const ip of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1']) assert.equal(isLoopbackAddress(ip), true, ip);
  for (const ip of [undefined, '', 'localhost', 'not-an-address']) assert.equal(isLoopbackAddress(ip), false, String(ip));
  assert.equal(inRanges('127.0.0.1', ['127.0.0.1']), true);
  assert.equal(inRanges('::ffff:127.0.0.1', ['127.0.0.0/8']), true);
  assert.equal(inRanges('127.0.1.1', ['127.0.0.0/24']), false);
  assert.equal(inRanges('::1', ['::1/128']), true);
  assert.equal(inRanges('::1', ['127.0.0.1']), false);
  assert.equal(inRanges('garbage', ['127.0.0.1']), false);
});
