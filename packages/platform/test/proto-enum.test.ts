import { describe, expect, it } from "vitest";
import { DomainError } from "../src/errors.js";
import { enumFilter, fromProtoEnum } from "../src/proto-enum.js";

/** A proto enum as protoc-gen-es emits it: UNSPECIFIED is 0. */
enum StatusProto {
  UNSPECIFIED = 0,
  ACTIVE = 1,
  REMOVED = 2,
}
const statusToProto = { active: StatusProto.ACTIVE, removed: StatusProto.REMOVED } as const;

describe("fromProtoEnum", () => {
  it("reads the table backwards", () => {
    expect(fromProtoEnum(statusToProto, StatusProto.ACTIVE)).toBe("active");
    expect(fromProtoEnum(statusToProto, StatusProto.REMOVED)).toBe("removed");
  });

  it("has no domain value for UNSPECIFIED or a value the table does not know", () => {
    expect(fromProtoEnum(statusToProto, StatusProto.UNSPECIFIED)).toBeUndefined();
    expect(fromProtoEnum(statusToProto, 7 as StatusProto)).toBeUndefined();
  });
});

describe("enumFilter", () => {
  it("is no filter for UNSPECIFIED and the domain value for a known one", () => {
    expect(enumFilter(statusToProto, StatusProto.UNSPECIFIED)).toBeUndefined();
    expect(enumFilter(statusToProto, StatusProto.REMOVED)).toBe("removed");
  });

  it("refuses an unknown value on the named field rather than listing everything", () => {
    const refuse = (field?: string) => () => enumFilter(statusToProto, 7 as StatusProto, field);
    expect(refuse()).toThrow(DomainError);
    expect(refuse()).toThrow(expect.objectContaining({ fieldErrors: { status: ["Unknown status"] } }));
    expect(refuse("action")).toThrow(expect.objectContaining({ fieldErrors: { action: ["Unknown action"] } }));
  });
});
