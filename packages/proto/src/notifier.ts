// The notifier's contract: webhook endpoints and their deliveries.
export * from "./gen/affiliate/notifier/v1/notifier_service_pb.js";
export * from "./gen/affiliate/notifier/v1/webhook_pb.js";
