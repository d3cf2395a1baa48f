// The erasure-owner contract, served by every service that holds a customer's personal data.
export * from "./gen/affiliate/erasure/v1/erasure_owner_service_pb.js";
