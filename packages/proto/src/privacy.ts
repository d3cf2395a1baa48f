// The privacy service's contract: one import point for its generated messages and services.
export * from "./gen/affiliate/privacy/v1/erasure_pb.js";
export * from "./gen/affiliate/privacy/v1/events_pb.js";
export * from "./gen/affiliate/privacy/v1/privacy_service_pb.js";
