import { callTimeout, createRpcTransport } from "@affiliate/platform";
import { ErasureOwnerService, type StoreCount } from "@affiliate/proto/erasure";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import type { PersonalDataHolder, StoreCounts } from "../domain/ports.js";

const countsOf = (stores: StoreCount[]): StoreCounts =>
  Object.fromEntries(stores.map(({ store, records }) => [store, Number(records)]));

/** One owner of personal data behind its ErasureOwnerService. */
export function erasureOwnerOver(
  name: string,
  client: Client<typeof ErasureOwnerService>,
  timeoutMs: number,
): PersonalDataHolder {
  return {
    name,
    async erase(customer, erasureId) {
      const { stores } = await client.eraseCustomer({ ...customer, erasureId }, callTimeout(timeoutMs));
      return countsOf(stores);
    },
    async find(customer) {
      const { stores } = await client.findCustomer(customer, callTimeout(timeoutMs));
      return countsOf(stores);
    },
  };
}

/**
 * The owners the configuration names, each over its own transport: an owner whose URL is unset
 * is neither called nor listed on receipts (so the notifier joins by setting NOTIFIER_URL).
 */
export function configuredOwners(
  urls: Record<string, string | undefined>,
  timeoutMs: number,
): { owners: PersonalDataHolder[]; transports: Record<string, Transport> } {
  const transports: Record<string, Transport> = {};
  const owners: PersonalDataHolder[] = [];
  for (const [name, url] of Object.entries(urls)) {
    if (!url) continue;
    transports[name] = createRpcTransport(url, { timeoutMs });
    owners.push(erasureOwnerOver(name, createClient(ErasureOwnerService, transports[name]), timeoutMs));
  }
  return { owners, transports };
}
