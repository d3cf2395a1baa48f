import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const nonceBytes = 12;
const tagBytes = 16;

/**
 * Encryption at rest with AES-256-GCM, under a key derived (HKDF-SHA256) from a configured secret
 * for one purpose, so one secret can key several uses without one revealing another. A sealed
 * value is nonce, tag and ciphertext; opening it with another key, or altered, throws.
 */
export class SealingKey {
  readonly #key: Buffer;

  constructor(secret: string, purpose: { salt: string; info: string }) {
    this.#key = Buffer.from(hkdfSync("sha256", secret, purpose.salt, purpose.info, 32));
  }

  seal(text: string): Buffer {
    const nonce = randomBytes(nonceBytes);
    const cipher = createCipheriv("aes-256-gcm", this.#key, nonce);
    const sealed = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
    return Buffer.concat([nonce, cipher.getAuthTag(), sealed]);
  }

  open(sealed: Uint8Array): string {
    const bytes = Buffer.from(sealed);
    const decipher = createDecipheriv("aes-256-gcm", this.#key, bytes.subarray(0, nonceBytes));
    decipher.setAuthTag(bytes.subarray(nonceBytes, nonceBytes + tagBytes));
    return Buffer.concat([decipher.update(bytes.subarray(nonceBytes + tagBytes)), decipher.final()]).toString("utf8");
  }
}
