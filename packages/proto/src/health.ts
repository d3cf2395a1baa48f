// The standard grpc.health.v1 protocol.
export * from "./gen/grpc/health/v1/health_pb.js";
