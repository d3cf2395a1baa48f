import type { Sql } from "@affiliate/platform";
import { purgeDeliveries } from "../store/deliveries.js";
import { purgeEmails } from "../store/emails.js";
import { deliveryRetentionMs } from "./schedule.js";

/** Deliveries (payloads and attempts) and settled emails older than 30 days are deleted (contract 9b). */
export async function purgeExpired(sql: Sql, now: Date): Promise<{ deliveries: number; emails: number }> {
  const before = new Date(now.getTime() - deliveryRetentionMs);
  return { deliveries: await purgeDeliveries(sql, before), emails: await purgeEmails(sql, before) };
}
