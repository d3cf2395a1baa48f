// The ledger service's contract: one import point for its generated messages and services.
export * from "./gen/affiliate/ledger/v1/commission_pb.js";
export * from "./gen/affiliate/ledger/v1/events_pb.js";
export * from "./gen/affiliate/ledger/v1/ledger_service_pb.js";
export * from "./gen/affiliate/ledger/v1/refund_pb.js";
