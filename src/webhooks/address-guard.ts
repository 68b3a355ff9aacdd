/**
 * SSRF guard for webhook targets: classifies an IP address so that a `callback_url` cannot make
 * Pigeon call into its own host, the operator's private network or a cloud metadata service
 * (DECISIONS.md §4). Pure: the dispatcher resolves the name, asks here, and connects to exactly
 * the address it asked about.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** What an address is; only `public` may receive webhooks unless WEBHOOK_ALLOW_PRIVATE=true. */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved'
  | 'invalid';

interface Range {
  base: bigint;
  bits: number;
  cls: AddressClass;
}

function v4ToBigInt(ip: string): bigint | null {
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  let out = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    out = (out << 8n) | BigInt(Number(p));
  }
  return out;
}

function v6ToBigInt(input: string): bigint | null {
  let ip = input;
  const zone = ip.indexOf('%');
  if (zone >= 0) ip = ip.slice(0, zone);
  if (!isIPv6(ip)) return null;
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two hextets.
  const lastColon = ip.lastIndexOf(':');
  const tail = ip.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = v4ToBigInt(tail);
    if (v4 === null) return null;
    ip = `${ip.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = ip.split('::') as [string, string | undefined];
  const headParts = head === '' ? [] : head.split(':');
  const restParts = rest === undefined || rest === '' ? [] : rest.split(':');
  const missing = 8 - headParts.length - restParts.length;
  const hextets = rest === undefined ? headParts : [...headParts, ...Array<string>(missing).fill('0'), ...restParts];
  if (hextets.length !== 8) return null;
  let out = 0n;
  for (const h of hextets) out = (out << 16n) | BigInt(parseInt(h, 16));
  return out;
}

function v4(cidr: string, cls: AddressClass): Range {
  const [addr, bits] = cidr.split('/') as [string, string];
  return { base: v4ToBigInt(addr)!, bits: Number(bits), cls };
}

function v6(cidr: string, cls: AddressClass): Range {
  const [addr, bits] = cidr.split('/') as [string, string];
  return { base: v6ToBigInt(addr)!, bits: Number(bits), cls };
}

// Most specific first: the first matching range decides.
const V4_RANGES: Range[] = [
  v4('169.254.169.254/32', 'metadata'), // AWS, GCP, Azure, OpenStack, DigitalOcean
  v4('168.63.129.16/32', 'metadata'), // Azure WireServer
  v4('100.100.100.200/32', 'metadata'), // Alibaba Cloud
  v4('0.0.0.0/8', 'unspecified'), // "this network": 0.0.0.0 reaches the local host on Linux
  v4('127.0.0.0/8', 'loopback'),
  v4('10.0.0.0/8', 'private'),
  v4('172.16.0.0/12', 'private'),
  v4('192.168.0.0/16', 'private'),
  v4('169.254.0.0/16', 'link-local'),
  v4('100.64.0.0/10', 'cgnat'),
  v4('192.0.0.0/24', 'reserved'), // IETF protocol assignments (192.0.0.192 is Oracle Cloud metadata)
  v4('192.0.2.0/24', 'reserved'), // documentation
  v4('198.18.0.0/15', 'reserved'), // benchmarking
  v4('198.51.100.0/24', 'reserved'),
  v4('203.0.113.0/24', 'reserved'),
  v4('224.0.0.0/4', 'multicast'),
  v4('240.0.0.0/4', 'reserved'), // includes 255.255.255.255
];

const V6_RANGES: Range[] = [
  v6('fd00:ec2::254/128', 'metadata'), // AWS IMDS over IPv6
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('fe80::/10', 'link-local'),
  v6('fec0::/10', 'private'), // deprecated site-local
  v6('fc00::/7', 'private'), // unique local
  v6('ff00::/8', 'multicast'),
  v6('100::/64', 'reserved'), // discard-only
  v6('2001:db8::/32', 'reserved'), // documentation
  v6('2001::/32', 'reserved'), // Teredo: the IPv4 inside is obfuscated, so it cannot be checked
  v6('64:ff9b:1::/48', 'reserved'), // local-use NAT64
];

function match(value: bigint, width: number, ranges: Range[]): AddressClass | null {
  for (const r of ranges) {
    const shift = BigInt(width - r.bits);
    if (value >> shift === r.base >> shift) return r.cls;
  }
  return null;
}

function classifyV4(value: bigint): AddressClass {
  return match(value, 32, V4_RANGES) ?? 'public';
}

/**
 * Classifies an IPv4 or IPv6 address. IPv6 forms that carry an IPv4 address (IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d` (SIIT, RFC 2765), IPv4-compatible
 * `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that IPv4 address, since that
 * is where the packets end up. The forms whose IPv4 address cannot be read off reliably (Teredo,
 * local-use NAT64 `64:ff9b:1::/48`) are refused as reserved.
 */
export function classifyAddress(ip: string): AddressClass {
  if (isIPv4(ip)) {
    const value = v4ToBigInt(ip);
    return value === null ? 'invalid' : classifyV4(value);
  }
  const value = v6ToBigInt(ip);
  if (value === null) return 'invalid';
  const direct = match(value, 128, V6_RANGES);
  if (direct) return direct;
  const low32 = value & 0xffffffffn;
  if (value >> 32n === 0xffffn) return classifyV4(low32); // ::ffff:0:0/96, mapped
  if (value >> 32n === 0xffff0000n) return classifyV4(low32); // ::ffff:0:0:0/96, translated (SIIT)
  if (value >> 32n === 0n) return classifyV4(low32); // ::/96, IPv4-compatible (:: and ::1 matched above)
  if (value >> 32n === 0x0064ff9b0000000000000000n) return classifyV4(low32); // 64:ff9b::/96, NAT64
  if (value >> 112n === 0x2002n) return classifyV4((value >> 80n) & 0xffffffffn); // 2002::/16, 6to4
  return 'public';
}

/** True when a webhook may be sent to this address. */
export function isAllowedTarget(ip: string, allowPrivate: boolean): boolean {
  const cls = classifyAddress(ip);
  if (cls === 'invalid') return false;
  return cls === 'public' || allowPrivate;
}

/** The IPv4 address an IPv4-mapped IPv6 address carries, else the address itself. */
function unmapped(ip: string): string {
  return ip.toLowerCase().startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}

/** True for an address of the local host's loopback (127/8, ::1, and their IPv4-in-IPv6 forms). */
export function isLoopbackAddress(ip: string | undefined): boolean {
  return ip !== undefined && classifyAddress(ip) === 'loopback';
}

/** True when `ip` is in one of `cidrs` (addresses or CIDR ranges, as TRUST_PROXY lists them). */
export function inRanges(ip: string, cidrs: readonly string[]): boolean {
  const address = unmapped(ip);
  const v4 = isIPv4(address);
  const value = v4 ? v4ToBigInt(address) : v6ToBigInt(address);
  if (value === null) return false;
  for (const cidr of cidrs) {
    const [base, bitsText] = cidr.split('/') as [string, string | undefined];
    const baseV4 = isIPv4(base);
    if (baseV4 !== v4) continue;
    const width = v4 ? 32 : 128;
    const baseValue = v4 ? v4ToBigInt(base) : v6ToBigInt(base);
    if (baseValue === null) continue;
    const shift = BigInt(width - Math.min(width, bitsText === undefined ? width : Number(bitsText)));
    if (value >> shift === baseValue >> shift) return true;
  }
  return false;
}

/**
 * The block a client address stands for when counting its failures: an IPv4 address itself, an
 * IPv6 address its /64 (the least one subscriber is given, so a client cannot shed its count by
 * moving within it). Text that is not an address is cut short, so it stays a small key.
 */
export function addressBlock(ip: string): string {
  const address = unmapped(ip);
  if (isIPv4(address)) return address;
  const value = v6ToBigInt(address);
  if (value === null) return address.slice(0, 64);
  const prefix = value >> 64n;
  const hextets = [48n, 32n, 16n, 0n].map((shift) => ((prefix >> shift) & 0xffffn).toString(16));
  return `${hextets.join(':')}::/64`;
}

const RESERVED_SUFFIXES = ['test', 'example', 'invalid', 'localhost', 'local', 'example.com', 'example.net', 'example.org'];

/**
 * Special-use names (RFC 2606, 6761, 6762) that no public receiver can have: `localhost`, `.test`,
 * `.example`, `.invalid`, `.local` and the documentation domains `example.com/.net/.org`. They are
 * refused by name, without asking DNS, so that sample and test URLs never cause traffic.
 */
export function isReservedName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return RESERVED_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}
