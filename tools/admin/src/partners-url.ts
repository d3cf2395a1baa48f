import { readFileSync } from "node:fs";

/**
 * The list of services (deploy/services.json), next to the CLI in a checkout
 * (tools/admin/dist -> ../../../deploy) and in the admin image (deploy/Dockerfile copies it).
 */
const serviceList = new URL("../../../deploy/services.json", import.meta.url);

/**
 * Where partners answers, from the variables `npm start` reads: PARTNERS_URL, else
 * PARTNERS_RPC_PORT on 127.0.0.1, else partners' port in the list of services. The list is read
 * only when needed: in a cluster PARTNERS_URL is always set.
 */
export function partnersUrl(env: NodeJS.ProcessEnv): string {
  if (env.PARTNERS_URL) return env.PARTNERS_URL;
  return `http://127.0.0.1:${env.PARTNERS_RPC_PORT || defaultPartnersPort()}`;
}

function defaultPartnersPort(): number {
  const { services } = JSON.parse(readFileSync(serviceList, "utf8")) as { services: { name: string; port: number }[] };
  const partners = services.find((service) => service.name === "partners");
  if (!partners) throw new Error(`${serviceList.pathname} names no partners service`);
  return partners.port;
}
