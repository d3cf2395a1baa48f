/** The sign-in form: a secret key pasted once, exchanged for a session; the key is not kept. */
import { h } from "@affiliate/browser-kit";

export function signInView(options: {
  alert?: string;
  notice?: string;
  /** Opens the session; resolves with a message when it failed. */
  onSubmit: (secretKey: string) => Promise<string | undefined>;
}): HTMLElement {
  const input = h("input", {
    id: "secret-key",
    name: "secret-key",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    placeholder: "sk_live_…",
  });
  const message = h(
    "p",
    { class: options.alert ? "status-line error" : "status-line ok", role: options.alert ? "alert" : "status" },
    options.alert ?? options.notice ?? "",
  );
  const button = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "sign-in card", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Affiliate console"),
    h(
      "p",
      {},
      "Paste your program's live secret key. It is exchanged once for a session that lasts up to 8 hours in this tab and is never stored; reloading the page signs you out.",
    ),
    h("label", { for: "secret-key" }, "Secret key"),
    input,
    button,
    message,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key.startsWith("sk_live_")) {
      message.className = "status-line error";
      message.setAttribute("role", "alert");
      message.textContent = key.startsWith("sk_test_")
        ? "That is a test-mode key; the console needs the live secret key (sk_live_…)."
        : "A secret key starts with sk_live_.";
      return;
    }
    button.disabled = true;
    message.className = "status-line";
    message.textContent = "Signing in…";
    const failure = await options.onSubmit(key);
    input.value = "";
    if (failure !== undefined) {
      button.disabled = false;
      message.className = "status-line error";
      message.setAttribute("role", "alert");
      message.textContent = failure;
    }
  });
  return h("div", { class: "sign-in-page" }, form);
}
