/**
 * The console's start: the sign-in form, then the screens under a navigation bar, one per `#/name` of the address. An ended session, however it
 * ended (expiry, sign-out elsewhere, a key rotation), comes back here with a message.
 */
import "@affiliate/browser-kit/styles.css";
import "./styles.css";
import { fill, h } from "@affiliate/browser-kit";
import type { Screen, ScreenContext } from "./context.js";
import { expiredMessage, explain, isSignedOut } from "./messages.js";
import { affiliatesScreen } from "./screens/affiliates.js";
import { commissionsScreen } from "./screens/commissions.js";
import { overviewScreen } from "./screens/overview.js";
import { payoutsScreen } from "./screens/payouts.js";
import { settingsScreen } from "./screens/settings.js";
import { stripeScreen } from "./screens/stripe.js";
import { webhooksScreen } from "./screens/webhooks.js";
import { openSession, type Session } from "./session.js";
import { signInView } from "./sign-in.js";

const root = document.getElementById("app");
if (!root) throw new Error("The page has no #app element");
const app: HTMLElement = root;

const screens: { path: string; title: string; screen: Screen }[] = [
  { path: "overview", title: "Overview", screen: overviewScreen },
  { path: "affiliates", title: "Affiliates", screen: affiliatesScreen },
  { path: "commissions", title: "Commissions", screen: commissionsScreen },
  { path: "payouts", title: "Payouts", screen: payoutsScreen },
  { path: "webhooks", title: "Webhooks", screen: webhooksScreen },
  { path: "stripe", title: "Stripe", screen: stripeScreen },
  { path: "settings", title: "Settings", screen: settingsScreen },
];

let session: Session | null = null;
let expiryTimer: ReturnType<typeof setTimeout> | undefined;
let context: ScreenContext | null = null;
const main = h("main", { id: "main", class: "main", tabindex: "-1" });

function showSignIn(message: { alert?: string; notice?: string } = {}) {
  session = null;
  context = null;
  clearTimeout(expiryTimer);
  fill(app, signInView({ ...message, onSubmit: signIn }));
  app.querySelector<HTMLInputElement>("#secret-key")?.focus();
}

async function signIn(secretKey: string): Promise<string | undefined> {
  try {
    await start(await openSession(secretKey));
    return undefined;
  } catch (error) {
    return isSignedOut(error)
      ? "This key was not accepted: paste the live secret key (sk_live_…) of your program."
      : explain(error);
  }
}

async function start(opened: Session) {
  // The program's name and currency, for every screen; also proves the session works.
  const { data: program } = await opened.client.program.get();
  session = opened;
  clearTimeout(expiryTimer);
  // Leave before the server refuses: the console says why instead of failing a click.
  const remaining = opened.expiresAt.getTime() - Date.now();
  expiryTimer = setTimeout(() => showSignIn({ alert: expiredMessage }), Math.max(0, Math.min(remaining, 2 ** 31 - 1)));
  context = {
    client: opened.client,
    currency: program.currency,
    programName: program.name,
    navigate: (path) => {
      location.hash = `#/${path}`;
    },
    signedOut: () => showSignIn({ alert: expiredMessage }),
  };
  fill(app, shell(program.name));
  route();
}

async function signOut() {
  const ending = session;
  showSignIn({ notice: "You are signed out. The session token is gone from this tab." });
  try {
    await ending?.client.console.sessions.close();
  } catch {
    // Signed out here either way; the session also ends at its expiry.
  }
}

function shell(programName: string): HTMLElement {
  const nav = h(
    "nav",
    { class: "nav", "aria-label": "Console" },
    h(
      "ul",
      {},
      ...screens.map((entry) =>
        h("li", {}, h("a", { href: `#/${entry.path}`, "data-screen": entry.path }, entry.title)),
      ),
    ),
  );
  const signOutButton = h("button", { type: "button", class: "secondary sign-out" }, "Sign out");
  signOutButton.addEventListener("click", () => void signOut());
  return h(
    "div",
    { class: "shell" },
    h(
      "header",
      { class: "top" },
      h(
        "div",
        { class: "brand" },
        h("span", { class: "brand-name" }, programName),
        h("span", { class: "brand-sub" }, "Affiliate console"),
      ),
      signOutButton,
    ),
    nav,
    main,
  );
}

function route() {
  if (!context) return;
  const [path = "overview", ...rest] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const entry = screens.find((candidate) => candidate.path === path) ?? screens[0];
  if (!entry) return;
  for (const link of app.querySelectorAll<HTMLAnchorElement>("nav a")) {
    if (link.dataset.screen === entry.path) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${entry.title} · ${context.programName} · Affiliate console`;
  fill(main, entry.screen(context, rest));
}

window.addEventListener("hashchange", route);

showSignIn();
