import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";

/**
 * Addresses a webhook may never reach (contract 9): loopback, private, link-local
 * (cloud metadata 169.254.169.254 included), CGNAT, unique-local, multicast, reserved and
 * "this network" (0.0.0.0/8). IPv4-mapped IPv6 is judged by the IPv4 address it carries.
 */
const refused = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  refused.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
  ["2001:db8::", 32],
] as const) {
  refused.addSubnet(network, prefix, "ipv6");
}

const mappedIpv4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;
const mappedIpv4Hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;

/** The IPv4 address an IPv4-mapped IPv6 address carries, else undefined. */
function embeddedIpv4(address: string): string | undefined {
  const dotted = mappedIpv4.exec(address);
  if (dotted) return dotted[1];
  const hex = mappedIpv4Hex.exec(address);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1] ?? "0", 16);
  const low = Number.parseInt(hex[2] ?? "0", 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/** Whether a webhook may connect to this IP address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !refused.check(address, "ipv4");
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return isPublicAddress(v4);
    return !refused.check(address, "ipv6");
  }
  return false;
}

export class RefusedAddress extends Error {
  override readonly name = "RefusedAddress";
  readonly code = "ERR_REFUSED_ADDRESS";
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect that resolves the name and refuses the connection when any address
 * it resolves to is not public: checked at connect time, on every attempt, so a name that
 * re-binds to a private address between creation and delivery (DNS rebinding) is caught.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean; family?: number } | number, callback: LookupCallback) => {
    const opts = typeof options === "number" ? { family: options } : options;
    dnsLookup(hostname, { all: true, family: opts.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      const bad = addresses.find((entry) => !isPublicAddress(entry.address));
      if (bad && !allowPrivate) {
        return callback(new RefusedAddress(`${hostname} resolves to a non-public address`), []);
      }
      if (opts.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new RefusedAddress(`${hostname} has no address`), []);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Why a webhook URL is refused at creation, or undefined when it may be used: http(s) only, no
 * credentials, and a host that is not a non-public IP literal or `localhost`. Names are resolved
 * and checked again at every connect.
 */
export function urlProblem(raw: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "Must be an absolute http(s) URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "Must be an http(s) URL";
  if (url.username || url.password) return "Must not contain credentials";
  if (raw.length > 2048) return "Must be at most 2048 characters";
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) && !isPublicAddress(host)) return "Must not point to a private, loopback or link-local address";
  if (host === "localhost" || host.endsWith(".localhost")) return "Must not point to localhost";
  return undefined;
}
