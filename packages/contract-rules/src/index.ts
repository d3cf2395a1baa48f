export * from "./commission-terms.js";
export * from "./email.js";
export * from "./fraud-settings.js";
export * from "./payout-details.js";
export * from "./referral-code.js";
export * from "./text.js";
