// The integrations service's contract: one import point for its generated messages and services.
export * from "./gen/affiliate/integrations/v1/integrations_service_pb.js";
export * from "./gen/affiliate/integrations/v1/stripe_event_pb.js";
