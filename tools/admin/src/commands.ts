import { type IssuedKeys, PartnersAdminService, type Product } from "@affiliate/proto/partners";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

export class UsageError extends Error {}

export const usage = `usage:
  admin products create --name <name>
  admin products list
  admin keys rotate --product <product_id>
  admin --help

Reaches partners at PARTNERS_URL, else http://127.0.0.1:$PARTNERS_RPC_PORT, else http://127.0.0.1:7101.`;

const productWithKeys = (product: Product | undefined, keys: IssuedKeys | undefined) => ({
  product_id: product?.id,
  name: product?.name,
  secret_key: keys?.secretKey,
  test_secret_key: keys?.testSecretKey,
  publishable_key: keys?.publishableKey,
  test_publishable_key: keys?.testPublishableKey,
});

/** Runs one command against the partners admin RPC and returns what to print. */
export async function runCommand(
  positionals: string[],
  flags: { name?: string | undefined; product?: string | undefined },
  partnersUrl: string,
): Promise<unknown> {
  const admin = createClient(
    PartnersAdminService,
    createConnectTransport({ baseUrl: partnersUrl, httpVersion: "2", useBinaryFormat: true, defaultTimeoutMs: 10_000 }),
  );
  const command = positionals.join(" ");
  try {
    switch (command) {
      case "products create": {
        if (!flags.name) throw new UsageError(`--name is required\n${usage}`);
        const { product, keys } = await admin.createProduct({ name: flags.name });
        return productWithKeys(product, keys);
      }
      case "products list": {
        const { products } = await admin.listProducts({});
        return {
          products: products.map((p) => ({
            product_id: p.id,
            name: p.name,
            created_at: p.createdAt ? timestampDate(p.createdAt).toISOString() : null,
          })),
        };
      }
      case "keys rotate": {
        if (!flags.product) throw new UsageError(`--product is required\n${usage}`);
        const { product, keys } = await admin.rotateKeys({ productId: flags.product });
        return productWithKeys(product, keys);
      }
      default:
        throw new UsageError(`${command ? `unknown command "${command}"` : "no command given"}\n${usage}`);
    }
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    if (error.code === Code.Unavailable) {
      throw new Error(`cannot reach the partners service at ${partnersUrl}; is the mesh running (npm start)?`);
    }
    throw new Error(error.rawMessage);
  }
}
