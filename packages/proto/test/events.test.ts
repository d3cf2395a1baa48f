import { type DescField, ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { allDomainEvents, domainEventOf, ledgerEvents } from "../src/events.js";
import { file_affiliate_ledger_v1_events } from "../src/gen/affiliate/ledger/v1/events_pb.js";
import { file_affiliate_partners_v1_events } from "../src/gen/affiliate/partners/v1/events_pb.js";
import { file_affiliate_payouts_v1_events } from "../src/gen/affiliate/payouts/v1/events_pb.js";
import { file_affiliate_privacy_v1_events } from "../src/gen/affiliate/privacy/v1/events_pb.js";

describe("the event registry", () => {
  it("registers every message of every events.proto, each once", () => {
    const declared = [
      file_affiliate_partners_v1_events,
      file_affiliate_ledger_v1_events,
      file_affiliate_payouts_v1_events,
      file_affiliate_privacy_v1_events,
    ]
      .flatMap((file) => file.messages.map((message) => message.typeName))
      .sort();
    expect(allDomainEvents.map((event) => event.schema.typeName).sort()).toEqual(declared);
  });

  it("names subjects <service>.<entity>.<past-tense>, unique, published by the service whose package holds the message", () => {
    for (const event of allDomainEvents) {
      expect(event.subject).toMatch(/^[a-z]+\.[a-z_]+\.[a-z_]+$/);
      expect(event.schema.typeName.startsWith(`affiliate.${event.service}.v1.`)).toBe(true);
    }
    expect(new Set(allDomainEvents.map((event) => event.subject)).size).toBe(allDomainEvents.length);
  });

  it("opens every event message with the envelope enqueueDomainEvent fills: id = 1, occurred_at = 2", () => {
    const shape = (field: DescField | undefined) =>
      field && [
        field.name,
        field.number,
        field.fieldKind === "scalar" ? field.scalar : field.fieldKind === "message" ? field.message.typeName : "",
      ];
    for (const event of allDomainEvents) {
      const [id, occurredAt] = event.schema.fields;
      expect(shape(id), event.subject).toEqual(["id", 1, ScalarType.STRING]);
      expect(shape(occurredAt), event.subject).toEqual(["occurred_at", 2, "google.protobuf.Timestamp"]);
    }
  });

  it("finds an event type by subject", () => {
    expect(domainEventOf("ledger.commission.refunded")).toBe(ledgerEvents.commissionRefunded);
    expect(domainEventOf("ledger.commission.exploded")).toBeUndefined();
  });
});
