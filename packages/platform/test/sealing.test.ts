import { createCipheriv, hkdfSync, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SealingKey } from "../src/sealing.js";

const purpose = { salt: "test-salt", info: "test-info" };
const firstSecret = "first-sealing-secret-0123456789abcdef";
const secondSecret = "second-sealing-secret-0123456789abcdef";

/** A value as SealingKey sealed it before values carried a version: nonce, tag, ciphertext. */
function sealedWithoutVersion(secret: string, text: string, nonce = randomBytes(12)): Buffer {
  const key = Buffer.from(hkdfSync("sha256", secret, purpose.salt, purpose.info, 32));
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const ciphertext = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), ciphertext]);
}

describe("SealingKey", () => {
  it("seals with the key's version byte first and opens its own values", () => {
    const key = new SealingKey(firstSecret, purpose);
    const sealed = key.seal("ada@example.com");
    expect(sealed[0]).toBe(1);
    expect(sealed.toString("latin1")).not.toContain("ada@example.com");
    expect(key.open(sealed)).toBe("ada@example.com");
    expect(new SealingKey(secondSecret, purpose, { version: 7 }).seal("x")[0]).toBe(7);
  });

  it("opens values sealed before versions, even one whose nonce starts with a version byte", () => {
    const key = new SealingKey(firstSecret, purpose);
    expect(key.open(sealedWithoutVersion(firstSecret, "before versions"))).toBe("before versions");
    const nonceLikeVersion = Buffer.concat([Buffer.of(1), randomBytes(11)]);
    expect(key.open(sealedWithoutVersion(firstSecret, "nonce starts 0x01", nonceLikeVersion))).toBe(
      "nonce starts 0x01",
    );
  });

  it("after a rotation seals under the new version and still opens the previous key's values, old format too", () => {
    const before = new SealingKey(firstSecret, purpose);
    const sealedBefore = before.seal("sealed under version 1");
    const legacy = sealedWithoutVersion(firstSecret, "sealed before versions");

    const rotated = new SealingKey(secondSecret, purpose, {
      version: 2,
      previous: [{ version: 1, secret: firstSecret }],
    });
    const sealedAfter = rotated.seal("sealed under version 2");
    expect(sealedAfter[0]).toBe(2);
    expect([rotated.open(sealedBefore), rotated.open(legacy), rotated.open(sealedAfter)]).toEqual([
      "sealed under version 1",
      "sealed before versions",
      "sealed under version 2",
    ]);
    // The old key cannot open the new values, nor the new key alone the old ones.
    expect(() => before.open(sealedAfter)).toThrow(/opens under none of the key versions 1/);
    expect(() => new SealingKey(secondSecret, purpose, { version: 2 }).open(sealedBefore)).toThrow(/key versions 2$/);
  });

  it("refuses another key, an altered value, a truncated one and a version outside 1 to 255", () => {
    const key = new SealingKey(firstSecret, purpose);
    const sealed = key.seal("secret text");
    expect(() => new SealingKey(secondSecret, purpose).open(sealed)).toThrow();
    const altered = Buffer.from(sealed);
    altered[altered.length - 1] = (altered[altered.length - 1] ?? 0) ^ 1;
    expect(() => key.open(altered)).toThrow();
    expect(() => key.open(sealed.subarray(0, 20))).toThrow();
    expect(() => new SealingKey(firstSecret, purpose, { version: 0 })).toThrow(RangeError);
    expect(() => new SealingKey(firstSecret, purpose, { version: 256 })).toThrow(RangeError);
    expect(
      () => new SealingKey(firstSecret, purpose, { version: 2, previous: [{ version: 2, secret: secondSecret }] }),
    ).toThrow(/two sealing secrets have version 2/);
  });
});
