/**
 * The portal's start: sign in from the address's fragment (`#token=` from the merchant's app,
 * `#code=` from an emailed link), else from the session kept in this tab, else the email form.
 */
import "@affiliate/browser-kit/styles.css";
import "./styles.css";
import { fill } from "@affiliate/browser-kit";
import { affiliateClient } from "./client.js";
import { Dashboard } from "./dashboard/dashboard.js";
import { expiredMessage, explain, isSignedOut, usedCodeMessage } from "./messages.js";
import { forgetSession, hasExpired, type Session, savedSession, saveSession, takeSignInFragment } from "./session.js";
import { signInView, signingInView } from "./sign-in.js";

const root = document.getElementById("app");
if (!root) throw new Error("The page has no #app element");
const app: HTMLElement = root;

let productId: string | undefined;

function showSignIn(message: { alert?: string; notice?: string } = {}) {
  forgetSession();
  fill(app, signInView({ ...(productId ? { productId } : {}), ...message }));
  app.querySelector<HTMLInputElement>(productId ? "#sign-in-email" : "#sign-in-product")?.focus();
}

function showDashboard(session: Session) {
  const dashboard = new Dashboard({
    client: affiliateClient(session.token),
    onSignOut: () => showSignIn({ notice: "You are signed out. Use your sign-in link again, or ask for a new one." }),
    onExpired: () => showSignIn({ alert: expiredMessage }),
  });
  fill(app, dashboard.element);
  void dashboard.load();
}

async function start() {
  const fragment = takeSignInFragment();
  productId = fragment.product;
  if (fragment.token) {
    const session = { token: fragment.token, expires_at: null };
    saveSession(session);
    showDashboard(session);
    return;
  }
  if (fragment.code) {
    fill(app, signingInView());
    try {
      const { data: issued } = await affiliateClient().affiliate.login.exchange({ code: fragment.code });
      saveSession(issued);
      showDashboard(issued);
    } catch (error) {
      showSignIn({ alert: isSignedOut(error) ? usedCodeMessage : explain(error) });
    }
    return;
  }
  const saved = savedSession();
  if (saved && !hasExpired(saved)) showDashboard(saved);
  else if (saved) showSignIn({ alert: expiredMessage });
  else showSignIn();
}

void start();
// A sign-in link opened in a tab that already shows the portal changes only the fragment.
window.addEventListener("hashchange", () => {
  if (/(^|[#&])(token|code|product)=/.test(location.hash)) void start();
});
