import { uuidv7 } from "uuidv7";

/** Type prefixes of public ids (contract section 11). */
export type IdPrefix =
  | "prd"
  | "aff"
  | "ptn"
  | "com"
  | "po"
  | "evt"
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
 * A new opaque id: the type prefix and a UUIDv7 without dashes. UUIDv7 starts with the creation
 * time in milliseconds, so ids of one type sort by creation time; lists can page on the id alone.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${uuidv7().replaceAll("-", "")}`;
}

/** Whether `value` looks like an id of this type; a cheap check before a lookup. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return new RegExp(`^${prefix}_[0-9a-f]{32}$`).test(value);
}
