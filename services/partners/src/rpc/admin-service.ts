import type { Sql } from "@affiliate/platform";
import type { PartnersAdminService } from "@affiliate/proto/partners";
import type { ServiceImpl } from "@connectrpc/connect";
import { productToProto } from "../codec.js";
import { createProduct, rotateKeys } from "../domain/products.js";
import { listProducts } from "../store/products.js";

/** The operator's RPCs: products and keys. Not exposed through the public gateway. */
export function createAdminService({ sql }: { sql: Sql }): ServiceImpl<typeof PartnersAdminService> {
  return {
    async createProduct(req) {
      const { product, keys } = await createProduct(sql, req.name);
      return { product: productToProto(product), keys };
    },
    async rotateKeys(req) {
      const { product, keys } = await rotateKeys(sql, req.productId);
      return { product: productToProto(product), keys };
    },
    async listProducts() {
      return { products: (await listProducts(sql)).map(productToProto) };
    },
  };
}
