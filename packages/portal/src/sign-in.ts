/**
 * Signing in without a link: the program's id and the affiliate's email. The API answers alike
 * whether or not the email belongs to an affiliate, so the page says what happens if it does.
 */
import { fill, h } from "@affiliate/browser-kit";
import { affiliateClient } from "./client.js";
import { explain } from "./messages.js";

export function signInView(options: { productId?: string; alert?: string; notice?: string }): HTMLElement {
  const product = h("input", {
    id: "sign-in-product",
    name: "product_id",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "prd_…",
    value: options.productId ?? "",
  });
  const email = h("input", {
    id: "sign-in-email",
    name: "email",
    type: "email",
    required: true,
    autocomplete: "email",
    placeholder: "you@example.com",
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Email me a sign-in link");
  const feedback = h("div", { class: "feedback", role: "status", "aria-live": "polite" });
  const alertBox = h("div", { class: "feedback", role: "alert" });
  if (options.alert) fill(alertBox, h("p", { class: "error" }, options.alert));
  else if (options.notice) fill(feedback, h("p", { class: "notice" }, options.notice));

  const form = h(
    "form",
    { class: "card sign-in", "aria-labelledby": "sign-in-title", novalidate: true },
    h("h1", { id: "sign-in-title" }, "Sign in to your affiliate dashboard"),
    h(
      "p",
      { class: "muted" },
      "Use the sign-in link your program sent you, or get one by email: enter the program's id (it is in the link or the email that welcomed you) and your email.",
    ),
    alertBox,
    h("label", { for: "sign-in-product" }, "Program id"),
    product,
    h("label", { for: "sign-in-email" }, "Your email"),
    email,
    submit,
    feedback,
  );

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    alertBox.replaceChildren();
    const productId = product.value.trim();
    const address = email.value.trim();
    if (!productId || !address || !email.checkValidity()) {
      fill(alertBox, h("p", { class: "error" }, "Enter the program id and a valid email address."));
      (productId ? email : product).focus();
      return;
    }
    submit.disabled = true;
    fill(feedback, h("p", { class: "muted" }, "Sending…"));
    try {
      await affiliateClient().affiliate.login.request({ product_id: productId, email: address });
      fill(
        feedback,
        h(
          "p",
          { class: "notice" },
          h("strong", {}, "Check your email. "),
          `If ${address} belongs to an affiliate of this program, a sign-in link is on its way. It works once, for 15 minutes.`,
        ),
      );
    } catch (error) {
      feedback.replaceChildren();
      fill(alertBox, h("p", { class: "error" }, explain(error)));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/** While an emailed code is traded for a token. */
export function signingInView(): HTMLElement {
  return h("div", { class: "card", role: "status", "aria-live": "polite" }, h("p", {}, "Signing you in…"));
}
