// The partners service's contract: one import point for its generated messages and services.
export * from "./gen/affiliate/partners/v1/admin_service_pb.js";
export * from "./gen/affiliate/partners/v1/events_pb.js";
export * from "./gen/affiliate/partners/v1/partners_service_pb.js";
export * from "./gen/affiliate/partners/v1/partnership_pb.js";
export * from "./gen/affiliate/partners/v1/payout_method_pb.js";
export * from "./gen/affiliate/partners/v1/product_pb.js";
export * from "./gen/affiliate/partners/v1/program_pb.js";
