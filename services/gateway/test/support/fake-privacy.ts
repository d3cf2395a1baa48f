import { ErasureSchema, ErasureStatus, PrivacyService } from "@affiliate/proto/privacy";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, type ServiceImpl, type Transport } from "@connectrpc/connect";
import { CallLog, serveRecorded } from "./recorded-service.js";

export type PrivacyMethod = keyof ServiceImpl<typeof PrivacyService>;

/**
 * An in-memory privacy service behind the real generated contract. Each EraseCustomer completes
 * at once with the counts the test set for that email (then zeroes, as a repeat finds nothing),
 * or fails as the test says. It counts calls and records requests.
 */
export class FakePrivacy extends CallLog<PrivacyMethod> {
  readonly transport: Transport;
  readonly client: Client<typeof PrivacyService>;
  /** Store counts the next erasure of an email answers. */
  readonly pending = new Map<string, Record<string, number>>();
  readonly erasures: { productId: string; email: string; erasure: ReturnType<typeof create<typeof ErasureSchema>> }[] =
    [];
  private sequence = 0;

  constructor() {
    super();
    const now = () => timestampFromDate(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)));
    const impl: ServiceImpl<typeof PrivacyService> = {
      eraseCustomer: async ({ productId, email }) => {
        const counts = this.pending.get(email) ?? {};
        this.pending.delete(email);
        const stores = ["affiliate_profiles", "commissions", "tracking_events", "webhook_deliveries"].map((store) => ({
          store,
          records: BigInt(counts[store] ?? 0),
        }));
        const erasure = create(ErasureSchema, {
          id: `ers_${String(++this.sequence).padStart(32, "0")}`,
          productId,
          status: ErasureStatus.COMPLETED,
          requestedAt: now(),
          completedAt: now(),
          verifiedAt: now(),
          stores,
        });
        this.erasures.unshift({ productId, email, erasure });
        return { erasure };
      },
      getErasure: async ({ productId, erasureId }) => {
        const found = this.erasures.find((e) => e.productId === productId && e.erasure.id === erasureId);
        if (!found) throw new ConnectError(`Erasure ${erasureId} not found`, Code.NotFound);
        return { erasure: found.erasure };
      },
      listErasures: async ({ productId, email }) => ({
        erasures: this.erasures.filter((e) => e.productId === productId && e.email === email).map((e) => e.erasure),
      }),
    };
    ({ transport: this.transport, client: this.client } = serveRecorded(PrivacyService, impl, this));
  }
}
