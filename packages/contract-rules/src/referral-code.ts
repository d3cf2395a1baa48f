/**
 * A referral code as registration and tracking accept it: 3-50 ASCII letters, digits, hyphens or
 * underscores, so it survives a URL, a query string and being read aloud. The services and
 * the public REST shapes test the same one.
 */
export const referralCodePattern = /^[A-Za-z0-9_-]{3,50}$/;
