import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const nonceBytes = 12;
const tagBytes = 16;

/** A secret a SealingKey opened values with before the current one: the version its values carry. */
export interface PreviousSealingSecret {
  version: number;
  secret: string;
}

/**
 * Encryption at rest with AES-256-GCM, under a key derived (HKDF-SHA256) from a configured secret
 * for one purpose, so one secret can key several uses without one revealing another. A sealed
 * value is a version byte (which secret sealed it, 1 to 255), nonce, tag and ciphertext; opening
 * it with another key, or altered, throws.
 *
 * The secret can rotate: seal under a new secret with the next version and keep the previous
 * one configured, and values sealed under either open. A value sealed before values carried a
 * version (nonce, tag, ciphertext) opens under version 1, the version every key had then.
 */
export class SealingKey {
  readonly #version: number;
  readonly #keys = new Map<number, Buffer>();

  constructor(
    secret: string,
    purpose: { salt: string; info: string },
    rotation: { version?: number; previous?: PreviousSealingSecret[] } = {},
  ) {
    const derive = (value: string) => Buffer.from(hkdfSync("sha256", value, purpose.salt, purpose.info, 32));
    this.#version = rotation.version ?? 1;
    for (const { version, secret: value } of [{ version: this.#version, secret }, ...(rotation.previous ?? [])]) {
      if (!Number.isInteger(version) || version < 1 || version > 255) {
        throw new RangeError(`a sealing key version is 1 to 255, not ${version}`);
      }
      if (this.#keys.has(version)) throw new RangeError(`two sealing secrets have version ${version}`);
      this.#keys.set(version, derive(value));
    }
  }

  seal(text: string): Buffer {
    const nonce = randomBytes(nonceBytes);
    const cipher = createCipheriv("aes-256-gcm", this.#keys.get(this.#version) as Buffer, nonce);
    const sealed = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.of(this.#version), nonce, cipher.getAuthTag(), sealed]);
  }

  open(sealed: Uint8Array): string {
    const bytes = Buffer.from(sealed);
    const versioned = this.#keys.get(bytes[0] ?? 0);
    if (versioned) {
      const text = openWith(versioned, bytes.subarray(1));
      if (text !== undefined) return text;
    }
    // Unversioned: its first byte is the nonce's, which may equal a version by chance (the tag
    // tells the two apart above).
    const unversioned = this.#keys.get(1);
    const text = unversioned && openWith(unversioned, bytes);
    if (text === undefined) {
      throw new Error(`the sealed value opens under none of the key versions ${[...this.#keys.keys()].join(", ")}`);
    }
    return text;
  }
}

/** The text of nonce, tag and ciphertext under `key`; undefined when the tag does not match. */
function openWith(key: Buffer, bytes: Buffer): string | undefined {
  if (bytes.length < nonceBytes + tagBytes) return undefined;
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, nonceBytes));
  decipher.setAuthTag(bytes.subarray(nonceBytes, nonceBytes + tagBytes));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(nonceBytes + tagBytes)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
