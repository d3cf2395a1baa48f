import { describe, expect, it } from "vitest";
import { applyGroupOf } from "../src/providers/stripe/map-event.js";
import { stripeEventSchema } from "../src/providers/stripe/payloads.js";
import { fixtures, stripeEvent } from "./harness.js";

const groupOf = (type: string, object: Record<string, unknown>) =>
  applyGroupOf(stripeEventSchema.parse({ ...stripeEvent(type, object), id: "evt_1" }));

describe("applyGroupOf", () => {
  const invoice = fixtures.invoice({ id: "cus_1", email: "c@example.com" }, 1000);

  it("groups a customer's events by the customer, named by id or expanded", () => {
    expect([
      groupOf("customer.created", { id: "cus_1", object: "customer" }),
      groupOf("invoice.paid", invoice),
      groupOf("invoice.paid", { ...invoice, customer: { id: "cus_1", object: "customer" } }),
      groupOf("charge.refunded", { ...fixtures.charge(invoice, 500), id: "ch_1", customer: "cus_1" }),
    ]).toEqual(["customer:cus_1", "customer:cus_1", "customer:cus_1", "customer:cus_1"]);
  });

  it("groups a dispute's opening and closing, and a refund naming no customer, by their charge", () => {
    const dispute = { ...fixtures.dispute(invoice, "needs_response"), charge: "ch_1" };
    expect([
      groupOf("charge.dispute.created", dispute),
      groupOf("charge.dispute.closed", { ...dispute, status: "lost" }),
      groupOf("charge.dispute.closed", { ...dispute, charge: { id: "ch_1", object: "charge" } }),
      groupOf("charge.refunded", { ...fixtures.charge(invoice, 500), id: "ch_1", customer: null }),
    ]).toEqual(["charge:ch_1", "charge:ch_1", "charge:ch_1", "charge:ch_1"]);
  });

  it("puts an event naming neither customer nor charge in a group of its own", () => {
    expect([
      groupOf("charge.dispute.created", { ...fixtures.dispute(invoice, "needs_response"), charge: null }),
      groupOf("checkout.session.completed", { id: "cs_1", object: "checkout.session", customer: null }),
    ]).toEqual(["event:evt_1", "event:evt_1"]);
  });
});
