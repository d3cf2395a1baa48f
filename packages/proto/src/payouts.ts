// The payouts service's contract: one import point for its generated messages and services.
export * from "./gen/affiliate/payouts/v1/events_pb.js";
export * from "./gen/affiliate/payouts/v1/payout_pb.js";
export * from "./gen/affiliate/payouts/v1/payouts_service_pb.js";
