import { newId } from "@affiliate/platform";
import { CommissionRefundedSchema, CommissionStatus } from "@affiliate/proto/ledger";
import { AffiliateLoginRequestedSchema, PartnershipCreatedSchema } from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordEvent } from "../src/domain/record-event.js";
import { failingDisablesAfterMs } from "../src/domain/schedule.js";
import { smtpMailer } from "../src/outbound/smtp-mailer.js";
import { eventually, type Harness, Sink, startHarness } from "./harness.js";

interface Mail {
  to: string[];
  raw: string;
}

let h: Harness;
let smtp: SMTPServer;
let sink: Sink;
const mails: Mail[] = [];
const productId = newId("prd");
const portalUrl = "https://affiliates.example.com/portal";

/** The text of the emails recorded for a recipient. */
const textsTo = async (recipient: string) =>
  (await h.sql<{ textBody: string }[]>`select text_body from emails where recipient = ${recipient}`).map(
    (row) => row.textBody,
  );

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (chunk: Buffer) => {
        raw += chunk.toString("utf8");
      });
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const port = (smtp.server.address() as { port: number }).port;
  h = await startHarness({
    mailer: smtpMailer(`smtp://127.0.0.1:${port}`, "Program <program@example.com>"),
    portalUrl,
  });
  sink = await new Sink().start();
});
afterAll(async () => {
  await h.close();
  await sink.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

const to = (address: string) => mails.filter((mail) => mail.to.includes(address));

function registration(partnershipId: string, notify: boolean) {
  return create(PartnershipCreatedSchema, {
    id: newId("msg"),
    occurredAt: timestampNow(),
    partnership: { id: partnershipId, productId },
    notify,
  });
}

function refund(commissionId: string, change: { previousStatus: CommissionStatus; previous: bigint; next: bigint }) {
  return create(CommissionRefundedSchema, {
    id: newId("msg"),
    occurredAt: timestampNow(),
    commission: { id: commissionId, productId, partnershipId: "ptn_refunds" },
    previousAmountCents: change.previous,
    newAmountCents: change.next,
    previousStatus: change.previousStatus,
    clawbackCents: change.previousStatus === CommissionStatus.PAID ? change.previous - change.next : 0n,
  });
}

describe("emails through a real SMTP server", () => {
  it("sends one welcome with the referral code, and none with notify: false", async () => {
    const welcomed = h.owners.addPartnership(productId, "ptn_welcome", { email: "new@example.com", name: "New" });
    h.owners.addPartnership(productId, "ptn_quiet", { email: "quiet@example.com", name: "Quiet" });
    await h.publish("partners.partnership.created", PartnershipCreatedSchema, registration("ptn_welcome", true));
    const quiet = registration("ptn_quiet", false);
    await h.publish("partners.partnership.created", PartnershipCreatedSchema, quiet);
    await eventually(() => expect(to("new@example.com")).toHaveLength(1));
    expect(to("new@example.com")[0]?.raw).toContain(welcomed.referralCode);
    expect(to("new@example.com")[0]?.raw).toMatch(/text\/html/);
    // PORTAL_URL is set: the welcome links to the portal's sign-in for this program.
    expect((await textsTo("new@example.com"))[0]).toContain(`${portalUrl}#product=${productId}`);
    await h.handled("partners.partnership.created");
    await h.workers.emails.drain();
    expect(to("quiet@example.com")).toHaveLength(0);
  });

  it("sends a refund notice with the reason for a full void and for a paid clawback, none for a partial refund of an approved commission", async () => {
    h.owners.addPartnership(productId, "ptn_refunds", { email: "earner@example.com", name: "Earner" });
    h.owners.addCommission(productId, "com_void", "ptn_refunds", { amountCents: 0n, reason: "chargeback" });
    h.owners.addCommission(productId, "com_paid", "ptn_refunds", { amountCents: 1000n, reason: "downgrade" });
    h.owners.addCommission(productId, "com_partial", "ptn_refunds", { amountCents: 1000n, reason: "partial" });
    await h.publish(
      "ledger.commission.refunded",
      CommissionRefundedSchema,
      refund("com_void", { previousStatus: CommissionStatus.APPROVED, previous: 2000n, next: 0n }),
    );
    await h.publish(
      "ledger.commission.refunded",
      CommissionRefundedSchema,
      refund("com_paid", { previousStatus: CommissionStatus.PAID, previous: 2000n, next: 1000n }),
    );
    const partial = refund("com_partial", { previousStatus: CommissionStatus.APPROVED, previous: 2000n, next: 1000n });
    await h.publish("ledger.commission.refunded", CommissionRefundedSchema, partial);
    await eventually(() => expect(to("earner@example.com")).toHaveLength(2));
    await h.handled("ledger.commission.refunded");
    await h.workers.emails.drain();
    const raws = to("earner@example.com").map((mail) => mail.raw);
    expect(raws).toHaveLength(2);
    expect(raws.some((raw) => raw.includes("com_void") && raw.includes("chargeback"))).toBe(true);
    expect(raws.some((raw) => raw.includes("com_paid") && raw.includes("downgrade"))).toBe(true);
  });

  it("sends a sign-in email with a one-time link to the portal; a spent sign-in sends nothing", async () => {
    h.owners.logins.set("lgn_live", {
      affiliate: { email: "signin@example.com", name: "Sig" },
      codes: [],
      spent: false,
    });
    h.owners.logins.set("lgn_spent", {
      affiliate: { email: "late@example.com", name: "Late" },
      codes: [],
      spent: true,
    });
    for (const loginId of ["lgn_live", "lgn_spent"]) {
      await h.publish(
        "partners.affiliate.login_requested",
        AffiliateLoginRequestedSchema,
        create(AffiliateLoginRequestedSchema, {
          id: newId("msg"),
          occurredAt: timestampNow(),
          productId,
          partnershipId: "ptn_signin",
          loginId,
        }),
      );
    }
    await eventually(() => expect(to("signin@example.com")).toHaveLength(1));
    await h.handled("partners.affiliate.login_requested");
    await h.workers.emails.drain();
    const [text] = await textsTo("signin@example.com");
    // The code partners issued last is the one sent.
    const issued = h.owners.logins.get("lgn_live")?.codes ?? [];
    expect(text).toContain(`${portalUrl}#code=${issued.at(-1)}`);
    expect(to("late@example.com")).toHaveLength(0);
    expect(await textsTo("late@example.com")).toEqual([]);
  });

  it("a redelivered event sends nothing twice", async () => {
    h.owners.addPartnership(productId, "ptn_twice", { email: "twice@example.com", name: "Twice" });
    const event = {
      productId,
      body: { id: newId("msg"), type: "partnership.created", created_at: new Date().toISOString(), data: {} },
      emails: [
        {
          template: "welcome" as const,
          recipient: "twice@example.com",
          subject: "Welcome",
          text: "hi",
          html: "<p>hi</p>",
        },
      ],
    };
    await h.sql.begin((tx) => recordEvent(tx, event, h.clock.now));
    await h.sql.begin((tx) => recordEvent(tx, event, h.clock.now));
    await eventually(() => expect(to("twice@example.com")).toHaveLength(1));
    await h.workers.emails.drain();
    expect(to("twice@example.com")).toHaveLength(1);
  });
});

describe("erasure (ErasureOwnerService)", () => {
  it("nulls data.customer_email in stored payloads of this product only, counts, and finds nothing after", async () => {
    const other = newId("prd");
    const { webhook } = await h.notifier.createWebhook({ productId, url: "https://example.com/erase", events: [] });
    const { webhook: foreign } = await h.notifier.createWebhook({
      productId: other,
      url: "https://example.com/erase",
      events: [],
    });
    const body = (email: string) => ({
      id: newId("msg"),
      type: "commission.created",
      created_at: new Date().toISOString(),
      data: { id: "com_x", customer_email: email },
    });
    for (const [pid, wid] of [
      [productId, webhook?.id],
      [other, foreign?.id],
    ] as const) {
      await h.sql`
        insert into deliveries (id, product_id, endpoint_id, event_id, event_type, payload, status)
        values (${newId("dlv")}, ${pid}, ${wid ?? ""}, ${newId("msg")}, 'commission.created',
                ${h.sql.json(body("gone@example.com"))}, 'succeeded')`;
    }
    const found = await h.erasure.findCustomer({ productId, email: "gone@example.com" });
    expect(found.stores.map((s) => [s.store, s.records])).toEqual([
      ["emails", 0n],
      ["webhook_deliveries", 1n],
    ]);
    const erasureId = newId("ers");
    const erased = await h.erasure.eraseCustomer({ productId, email: "gone@example.com", erasureId });
    expect(erased.stores.find((s) => s.store === "webhook_deliveries")?.records).toBe(1n);
    // The saga repeating its call (after a crash) still gets the whole count of its erasure...
    const repeated = await h.erasure.eraseCustomer({ productId, email: "gone@example.com", erasureId });
    expect(repeated.stores).toEqual(erased.stores);
    // ...while a new erasure of the same email finds nothing left.
    const again = await h.erasure.eraseCustomer({ productId, email: "gone@example.com", erasureId: newId("ers") });
    expect(again.stores.every((s) => s.records === 0n)).toBe(true);
    const after = await h.erasure.findCustomer({ productId, email: "gone@example.com" });
    expect(after.stores.every((s) => s.records === 0n)).toBe(true);
    const [stored] = await h.sql<{ email: string | null }[]>`
      select payload -> 'data' ->> 'customer_email' as email from deliveries where endpoint_id = ${webhook?.id ?? ""}`;
    expect(stored?.email).toBeNull();
    expect(await h.erasure.findCustomer({ productId: other, email: "gone@example.com" })).toMatchObject({
      stores: [{ store: "emails" }, { store: "webhook_deliveries", records: 1n }],
    });
  });
});

describe("erasure of the email quoted in free text", () => {
  it("replaces it, in any capitals, in payloads' reasons and in sent emails' bodies, counting each record once", async () => {
    const email = "quoted@example.com";
    const { webhook } = await h.notifier.createWebhook({ productId, url: "https://example.com/quoted", events: [] });
    await h.sql`
      insert into deliveries (id, product_id, endpoint_id, event_id, event_type, payload, status)
      values (${newId("dlv")}, ${productId}, ${webhook?.id ?? ""}, ${newId("msg")}, 'commission.refunded',
              ${h.sql.json({ data: { id: "com_q", customer_email: null, reason: "Customer QUOTED@Example.com disputed" } })},
              'succeeded')`;
    await h.sql`
      insert into emails (id, product_id, event_id, template, recipient, subject, text_body, html_body, status)
      values (${newId("eml")}, ${productId}, ${newId("msg")}, 'refund_notice', 'aff@example.com', 'Refunded',
              'Reason given: Customer QUOTED@Example.com disputed', '<p>Reason given: Customer quoted@example.com</p>',
              'recorded')`;
    const counts = (response: { stores: { store: string; records: bigint }[] }) =>
      Object.fromEntries(response.stores.map((s) => [s.store, Number(s.records)]));
    expect(counts(await h.erasure.findCustomer({ productId, email }))).toEqual({ webhook_deliveries: 1, emails: 1 });
    expect(counts(await h.erasure.eraseCustomer({ productId, email, erasureId: newId("ers") }))).toEqual({
      webhook_deliveries: 1,
      emails: 1,
    });
    expect(counts(await h.erasure.findCustomer({ productId, email }))).toEqual({ webhook_deliveries: 0, emails: 0 });

    const [delivery] = await h.sql<{ reason: string }[]>`
      select payload -> 'data' ->> 'reason' as reason from deliveries where endpoint_id = ${webhook?.id ?? ""}`;
    expect(delivery?.reason).toBe("Customer [erased] disputed");
    const [sent] = await h.sql<{ textBody: string; htmlBody: string }[]>`
      select text_body, html_body from emails where product_id = ${productId} and template = 'refund_notice'
        and recipient = 'aff@example.com' and subject = 'Refunded'`;
    expect(sent).toEqual({
      textBody: "Reason given: Customer [erased] disputed",
      htmlBody: "<p>Reason given: Customer [erased]</p>",
    });
  });
});

describe("auto-disable and the recovery probe", () => {
  it("410 disables at once (gone)", async () => {
    sink.program("/gone", [410]);
    const { webhook } = await h.notifier.createWebhook({ productId, url: "https://example.com/gone", events: [] });
    await h.sql`update endpoints set url = ${sink.url("/gone")} where id = ${webhook?.id ?? ""}`;
    await h.notifier.testWebhook({ productId, webhookId: webhook?.id ?? "" });
    await eventually(async () => {
      const read = await h.notifier.getWebhook({ productId, webhookId: webhook?.id ?? "" });
      expect(read.webhook).toMatchObject({ enabled: false, disabledReason: 3 });
    });
  });

  it("5 days without success disables (failing); later events are failed without an attempt; the probe's 2xx enables and re-queues them", async () => {
    sink.program("/failing", Array(50).fill(500));
    const { webhook } = await h.notifier.createWebhook({ productId, url: "https://example.com/failing", events: [] });
    const webhookId = webhook?.id ?? "";
    await h.sql`update endpoints set url = ${sink.url("/failing")} where id = ${webhookId}`;
    const { delivery: testDelivery } = await h.notifier.testWebhook({ productId, webhookId });
    // Recorded, not only received: a finish after the clock moves would schedule from then.
    await eventually(async () => {
      const [row] = await h.sql<
        { attempts: number }[]
      >`select attempts from deliveries where endpoint_id = ${webhookId}`;
      expect(row?.attempts).toBe(1);
    });
    h.clock.advance(failingDisablesAfterMs);
    await h.sql`update deliveries set next_attempt_at = ${h.clock.now} where endpoint_id = ${webhookId}`;
    await eventually(async () => {
      const read = await h.notifier.getWebhook({ productId, webhookId });
      expect(read.webhook).toMatchObject({ enabled: false, disabledReason: 2 });
    });
    const sent = sink.at("/failing").length;
    // An event while disabled: recorded as failed, no attempt.
    await h.sql.begin((tx) =>
      recordEvent(
        tx,
        {
          productId,
          body: { id: newId("msg"), type: "payout.created", created_at: new Date().toISOString(), data: {} },
          emails: [],
        },
        h.clock.now,
      ),
    );
    await h.workers.deliveries.drain();
    expect(sink.at("/failing")).toHaveLength(sent);
    // The probe, an hour later: the receiver answers again. Two runs at once (two replicas)
    // probe the endpoint once: each claims it before sending.
    sink.program("/failing", []);
    h.clock.advance(3600_000);
    const [first, second] = await Promise.all([h.workers.probe(), h.workers.probe()]);
    // (The periodic probe of the harness's workers may be the one that got there.)
    expect((first ?? 0) + (second ?? 0)).toBeLessThanOrEqual(1);
    const probes = sink
      .at("/failing")
      .slice(sent)
      .filter((r) => r.body.includes('"webhook.test"') && r.headers["webhook-id"] !== testDelivery?.eventId);
    expect(probes).toHaveLength(1);
    expect(probes[0]?.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
    const read = await h.notifier.getWebhook({ productId, webhookId });
    expect(read.webhook).toMatchObject({ enabled: true, disabledReason: 0 });
    await eventually(async () => {
      const statuses = await h.sql<
        { status: string }[]
      >`select status from deliveries where endpoint_id = ${webhookId}`;
      expect(statuses.map((s) => s.status).sort()).toEqual(["succeeded", "succeeded"]);
    });
  });
});
