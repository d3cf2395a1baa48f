import { describe, expect, it } from "vitest";
import { formatDate, periodOf, periods } from "../src/format.js";

describe("dates and periods as the apps write them", () => {
  it("writes a timestamp or a calendar date as its UTC date, and a dash for none", () => {
    const sameDay = [formatDate("2026-03-05"), formatDate("2026-03-05T23:59:59Z")];
    expect(sameDay[0]).toBe(sameDay[1]);
    expect(formatDate("2026-03-05")).not.toBe(formatDate("2026-03-06"));
    expect([formatDate(null), formatDate(undefined), formatDate("")]).toEqual(["—", "—", "—"]);
    expect(formatDate("not a date")).toBe("not a date");
  });

  it("names each period and the one before it, in the API's order", () => {
    expect(periods.map((period) => period.value)).toEqual(["7d", "30d", "90d", "12m"]);
    expect(periodOf("90d")).toEqual({ value: "90d", label: "90 days", previous: "previous 90 days" });
  });
});
