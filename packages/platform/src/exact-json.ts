import { configure } from "safe-stable-stringify";

const stringify = configure({ bigint: true, deterministic: false, circularValue: TypeError });

/**
 * JSON as the platform writes it, to clients (the gateway's answers) and to Postgres (json
 * parameters, such as the notifier's stored webhook bodies): exactly what JSON.stringify writes,
 * except that a bigint (a sum of cents) is written as the integer it is, digit for digit. JSON
 * puts no limit on an integer's size; JSON.stringify refuses bigints, and a Number would round
 * past 2^53. Decided in docs/api.md ("Amounts and totals").
 */
export function stringifyExact(payload: unknown): string {
  return stringify(payload) ?? "null";
}
