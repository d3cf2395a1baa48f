import { randomFillSync } from "node:crypto";

/** Type prefixes of public ids (contract section 11). */
export type IdPrefix =
  | "prd"
  | "aff"
  | "ptn"
  | "com"
  | "po"
  /** A tracking event (a click, signup or payment the ledger records; POST /events). */
  | "evt"
  /** A domain event: its outbox key and Nats-Msg-Id, and the webhook-id of the webhook it becomes. */
  | "msg"
  | "wh"
  | "adj"
  /** An affiliate's sign-in by email (partners). */
  | "lgn"
  | "key"
  | "rfd"
  | "dlv"
  | "eml"
  | "ers"
  /** A product's connection to its Stripe account. */
  | "scn"
  /** A received Stripe event, as the integrations service stores it. */
  | "sev";

/**
 * A new opaque id: the type prefix and a UUIDv7 (RFC 9562) without dashes. UUIDv7 starts with the
 * creation time in milliseconds, so ids of one type sort by creation time; lists can page on the
 * id alone. Within a millisecond a 42-bit counter (seeded at random each millisecond) follows the
 * time, so the ids one process makes always increase.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUuidV7Hex()}`;
}

/**
 * Random bytes drawn 4 KiB at a time: one system call per ~500 ids instead of one per id (a
 * draw per id costs 3% of the ledger's CPU under load).
 */
const randomPool = Buffer.alloc(4096);
let randomOffset = randomPool.length;
function randomUint32(): number {
  if (randomOffset + 4 > randomPool.length) {
    randomFillSync(randomPool);
    randomOffset = 0;
  }
  const value = randomPool.readUInt32BE(randomOffset);
  randomOffset += 4;
  return value;
}

const hexOfByte = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));
const counterSpan = 2 ** 42;
let lastMs = 0;
let counter = 0;

function nextUuidV7Hex(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    // 41 random bits: the top bit clear leaves room to count up within the millisecond.
    counter = (randomUint32() >>> 20) * 2 ** 30 + (randomUint32() >>> 2);
  } else {
    // The same millisecond, or a clock that stepped back: count on from the last id.
    counter += 1;
    if (counter >= counterSpan) {
      lastMs += 1;
      counter = 0;
    }
  }
  const counterHigh = Math.floor(counter / 2 ** 30); // 12 bits: rand_a
  const counterLow = counter % 2 ** 30; // 30 bits: the start of rand_b
  const tail = randomUint32();
  const bytes = [
    Math.floor(lastMs / 2 ** 40) & 0xff,
    Math.floor(lastMs / 2 ** 32) & 0xff,
    (lastMs >>> 24) & 0xff,
    (lastMs >>> 16) & 0xff,
    (lastMs >>> 8) & 0xff,
    lastMs & 0xff,
    0x70 | (counterHigh >>> 8),
    counterHigh & 0xff,
    0x80 | (counterLow >>> 24),
    (counterLow >>> 16) & 0xff,
    (counterLow >>> 8) & 0xff,
    counterLow & 0xff,
    tail >>> 24,
    (tail >>> 16) & 0xff,
    (tail >>> 8) & 0xff,
    tail & 0xff,
  ];
  let hex = "";
  for (const byte of bytes) hex += hexOfByte[byte];
  return hex;
}

/** Whether `value` looks like an id of this type; a cheap check before a lookup. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return new RegExp(`^${prefix}_[0-9a-f]{32}$`).test(value);
}
