// Messages shared by every service: error details.
export * from "./gen/affiliate/common/v1/errors_pb.js";
