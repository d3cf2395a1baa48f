import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";

const nonceBytes = 12;
const tagBytes = 16;

/**
 * The two uses of ERASURE_HASH_KEY, each with its own derived key: a keyed hash that finds an
 * email's receipts without storing the email, and a seal that keeps the email of a running
 * erasure readable to the saga only (so a resumed saga can call the owners again). A database
 * dump without the key reveals neither; the completed erasure keeps only the hash.
 */
export class EmailKeys {
  readonly #hashKey: Buffer;
  readonly #sealKey: Buffer;

  constructor(secret: string) {
    const derive = (purpose: string) =>
      Buffer.from(hkdfSync("sha256", secret, "affiliate-privacy", `erasure-email-${purpose}`, 32));
    this.#hashKey = derive("hash");
    this.#sealKey = derive("seal");
  }

  /** HMAC-SHA256 of the normalised email, hex. */
  hash(email: string): string {
    return createHmac("sha256", this.#hashKey).update(email, "utf8").digest("hex");
  }

  /** AES-256-GCM: nonce, tag, ciphertext. */
  seal(email: string): Buffer {
    const nonce = randomBytes(nonceBytes);
    const cipher = createCipheriv("aes-256-gcm", this.#sealKey, nonce);
    const sealed = Buffer.concat([cipher.update(email, "utf8"), cipher.final()]);
    return Buffer.concat([nonce, cipher.getAuthTag(), sealed]);
  }

  /** The email of `seal`; throws when the sealed bytes were not made with this key. */
  open(sealed: Buffer): string {
    const decipher = createDecipheriv("aes-256-gcm", this.#sealKey, sealed.subarray(0, nonceBytes));
    decipher.setAuthTag(sealed.subarray(nonceBytes, nonceBytes + tagBytes));
    return Buffer.concat([decipher.update(sealed.subarray(nonceBytes + tagBytes)), decipher.final()]).toString("utf8");
  }
}
