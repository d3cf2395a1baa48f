import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { isValidEmail, normalizeEmail } from "@affiliate/contract-rules";
import { DomainError, newId, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import {
  findActivePartnershipByEmail,
  hasRecentLogin,
  insertLogin,
  replaceLoginCode,
  useLoginCode,
} from "../store/affiliate-access.js";
import { getPartnershipOrThrow } from "../store/partnerships.js";
import { getProgramOrThrow } from "../store/programs.js";
import { type IssuedToken, issueToken } from "./affiliate-tokens.js";
import { storedHashOf } from "./rules.js";
import type { Partnership } from "./types.js";

/** A sign-in code works for this long after it was asked for (contract section 14). */
export const loginCodeTtlMs = 15 * 60 * 1000;
/** A token bought with a sign-in code lives a day: the longest a merchant may mint. */
export const exchangedTokenTtlSeconds = 86_400;
/**
 * Every sign-in request is answered no sooner than this after it arrived, whether or not the
 * email has a partnership: the work differs (a lookup alone, or a lookup, an insert and an
 * outbox row), its duration must not tell which. Well above that work's duration on a loaded
 * machine, so the answer's time is the floor's, plus the network's noise.
 */
export const loginAnswerFloorMs = 250;
/** At most one sign-in email per partnership this often: a loop of requests floods no inbox. */
export const loginEmailIntervalMs = 60_000;

/**
 * A sign-in by email (contract section 14): when the email has an active partnership in the
 * product, records a login and publishes affiliate.login_requested, on which the notifier emails
 * the code (at most once a minute per partnership). Nothing in the answer, its errors or its timing tells whether the email is known: a
 * malformed email or an unknown product is simply no partnership.
 */
export async function requestAffiliateLogin(
  sql: Sql,
  productId: string,
  email: string,
  options: { floorMs?: number } = {},
): Promise<void> {
  const answerAt = sleep(options.floorMs ?? loginAnswerFloorMs);
  const normalized = normalizeEmail(email);
  if (isValidEmail(normalized)) {
    await sql.begin(async (tx) => {
      const partnership = await findActivePartnershipByEmail(tx, productId, normalized);
      if (!partnership || (await hasRecentLogin(tx, partnership.id, loginEmailIntervalMs))) return;
      const login = {
        id: newId("lgn"),
        productId,
        partnershipId: partnership.id,
        expiresAt: new Date(Date.now() + loginCodeTtlMs),
      };
      await insertLogin(tx, login);
      await outbox.affiliateLoginRequested(tx, login);
    });
  }
  await answerAt;
}

/** A fresh sign-in code, 192 random bits; only its hash is stored. */
const generateLoginCode = () => randomBytes(24).toString("base64url");

/**
 * The code of a login, for the notifier to email. Each call issues a new code and forgets the
 * previous one: the notifier records the email in the transaction that marks the event applied,
 * and a code issued to an attempt that did not commit is never sent, so it must never work.
 */
export async function issueAffiliateLoginCode(
  sql: Sql,
  productId: string,
  loginId: string,
): Promise<{ code: string; expiresAt: Date; partnership: Partnership; programName: string }> {
  const code = generateLoginCode();
  const login = await replaceLoginCode(sql, productId, loginId, storedHashOf(code));
  if (login === "not_found") throw new DomainError("not_found", `Login ${loginId} not found`);
  if (login === "spent") throw new DomainError("failed_precondition", `Login ${loginId} was used or has expired`);
  const [partnership, program] = await Promise.all([
    getPartnershipOrThrow(sql, productId, login.partnershipId),
    getProgramOrThrow(sql, productId),
  ]);
  return { code, expiresAt: login.expiresAt, partnership, programName: program.name };
}

/** Trades a live code for a token, once; UNAUTHENTICATED for a code unknown, used or expired. */
export async function exchangeAffiliateLoginCode(sql: Sql, code: string): Promise<IssuedToken> {
  return sql.begin(async (tx) => {
    const login = code === "" ? undefined : await useLoginCode(tx, storedHashOf(code));
    if (!login) throw new DomainError("unauthenticated", "Invalid, used or expired sign-in code");
    return issueToken(tx, { productId: login.productId, id: login.partnershipId }, exchangedTokenTtlSeconds);
  });
}
