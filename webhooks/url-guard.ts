import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook may send (interface §23.6): https to a public address only,
 * so that a URL cannot make the service call into its own network. The
 * address is checked after DNS resolution, at registration and again at the
 * moment of each delivery's connection (a name that resolved to a public
 * address once may not the next time). `allowPrivate`
 * (WEBHOOK_ALLOW_PRIVATE) lifts both rules, for local use and tests.
 */

const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  INTERNAL.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  INTERNAL.addSubnet(network, prefix, 'ipv6');

/** Whether an IP address is loopback, private, link-local, reserved or otherwise not a public destination. */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family !== 6) return true;
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d) is that IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return INTERNAL.check(mapped[1]!, 'ipv4');
  return INTERNAL.check(address, 'ipv6');
}

export class UnsafeDestinationError extends Error {}

/** The URL parsed, when its scheme and form are allowed (not yet where it resolves). */
export function parseDestination(url: string, allowPrivate: boolean): URL | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const schemes = allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(parsed.protocol) || parsed.username !== '' || parsed.password !== '') return undefined;
  return parsed;
}

/** The host's addresses; every one must be public (unless allowed). @throws {UnsafeDestinationError} */
export async function resolveSafely(hostname: string, allowPrivate: boolean): Promise<Array<{ address: string; family: number }>> {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch {
      throw new UnsafeDestinationError('the host does not resolve');
    }
  }
  if (addresses.length === 0) throw new UnsafeDestinationError('the host does not resolve');
  if (!allowPrivate && addresses.some(({ address }) => isInternalAddress(address)))
    throw new UnsafeDestinationError('the host resolves to an internal address');
  return addresses;
}
