import { createHmac, hkdfSync } from "node:crypto";
import { SealingKey } from "@affiliate/platform";

/**
 * The two uses of ERASURE_HASH_KEY, each with its own derived key: a keyed hash that finds an
 * email's receipts without storing the email, and a seal that keeps the email of a running
 * erasure readable to the saga only (so a resumed saga can call the owners again). A database
 * dump without the key reveals neither; the completed erasure keeps only the hash.
 */
export class EmailKeys {
  readonly #hmacKey: Buffer;
  readonly #sealKey: SealingKey;

  constructor(secret: string) {
    this.#hmacKey = Buffer.from(hkdfSync("sha256", secret, "affiliate-privacy", "erasure-email-hash", 32));
    this.#sealKey = new SealingKey(secret, { salt: "affiliate-privacy", info: "erasure-email-seal" });
  }

  /** HMAC-SHA256 of the normalised email, hex. */
  hash(email: string): string {
    return createHmac("sha256", this.#hmacKey).update(email, "utf8").digest("hex");
  }

  /** AES-256-GCM: nonce, tag, ciphertext. */
  seal(email: string): Buffer {
    return this.#sealKey.seal(email);
  }

  /** The email of `seal`; throws when the sealed bytes were not made with this key. */
  open(sealed: Buffer): string {
    return this.#sealKey.open(sealed);
  }
}
