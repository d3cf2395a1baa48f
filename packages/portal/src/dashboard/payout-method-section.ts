/**
 * How the affiliate is paid (contract section 19): the method set, masked as the API answers it,
 * and a form to set a PayPal email or Wise details. Problems come back field by field from the
 * API (the platform's one rule), and each is shown beside its field.
 */

import { fill, h } from "@affiliate/browser-kit";
import { NotFoundError, ValidationError } from "@affiliate/client";
import type { PayoutMethod, PayoutMethodBody } from "../client.js";
import { explain } from "../messages.js";
import { card, type DashboardContext, type Section } from "./section.js";

type Field = HTMLInputElement | HTMLSelectElement;

export class PayoutMethodSection implements Section {
  readonly element: HTMLElement;
  /** The method set now, as the API shows it. */
  readonly body = h("div", { class: "method-current", "aria-live": "polite" });
  readonly #context: DashboardContext;
  readonly #status = h("div", { class: "feedback", role: "status", "aria-live": "polite" });
  readonly #alert = h("div", { class: "feedback", role: "alert" });
  readonly #type = h(
    "select",
    { id: "method-type", name: "type" },
    h("option", { value: "paypal" }, "PayPal"),
    h("option", { value: "wise" }, "Wise (bank transfer)"),
  );
  readonly #fields: Record<string, Field> = {
    email: h("input", { id: "method-email", name: "email", type: "email", autocomplete: "email" }),
    account_holder_name: h("input", { id: "method-name", name: "account_holder_name", autocomplete: "name" }),
    iban: h("input", { id: "method-iban", name: "iban", autocomplete: "off", spellcheck: "false" }),
    currency: h("input", { id: "method-currency", name: "currency", maxlength: 3, placeholder: "EUR" }),
    receiver_type: h(
      "select",
      { id: "method-receiver", name: "receiver_type" },
      h("option", { value: "person" }, "A person"),
      h("option", { value: "institution" }, "A business"),
    ),
  };
  readonly #problems: Record<string, HTMLElement> = {};
  readonly #rows: Record<string, HTMLElement> = {};
  readonly #remove = h("button", { type: "button", class: "quiet" }, "Remove");

  constructor(context: DashboardContext) {
    this.#context = context;
    const labels: Record<string, string> = {
      email: "Email",
      account_holder_name: "Name on the bank account",
      iban: "IBAN",
      currency: "Currency you receive (optional)",
      receiver_type: "The account belongs to",
    };
    for (const [name, field] of Object.entries(this.#fields)) {
      const problem = h("p", { class: "error field-problem", id: `${field.id}-problem` });
      field.setAttribute("aria-describedby", problem.id);
      this.#problems[name] = problem;
      this.#rows[name] = h("div", { class: "field" }, h("label", { for: field.id }, labels[name]), field, problem);
    }
    const submit = h("button", { type: "submit", class: "primary" }, "Save payout details");
    const form = h(
      "form",
      { class: "method-form", novalidate: true, "aria-label": "Payout details" },
      h("div", { class: "field" }, h("label", { for: "method-type" }, "Get paid with"), this.#type),
      ...Object.values(this.#rows),
      h("p", { class: "muted" }, "For Wise, give an IBAN, or only an email: Wise then asks you for your bank details."),
      h("div", { class: "method-actions" }, submit, this.#remove),
      this.#alert,
      this.#status,
    );
    this.#type.addEventListener("change", () => this.#showFields());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      submit.disabled = true;
      await this.#save();
      submit.disabled = false;
    });
    this.#remove.addEventListener("click", () => this.#delete());
    this.element = card("method-title", "Payout details", this.body, form);
    this.#showFields();
  }

  async load(): Promise<void> {
    try {
      this.#render((await this.#context.client.affiliate.payoutMethod.get()).data);
    } catch (error) {
      // 404 is the API's "nothing set yet".
      if (error instanceof NotFoundError) this.#render(null);
      else if (!this.#context.signedOut(error)) fill(this.body, h("p", { class: "error" }, explain(error)));
    }
  }

  #showFields() {
    const wise = this.#type.value === "wise";
    for (const name of ["account_holder_name", "iban", "currency", "receiver_type"]) {
      this.#rows[name]?.toggleAttribute("hidden", !wise);
    }
    const label = this.#rows.email?.querySelector("label");
    if (label) label.textContent = wise ? "Email (optional with an IBAN)" : "PayPal email";
  }

  #request(): PayoutMethodBody {
    const value = (name: string) => (this.#fields[name]?.value ?? "").trim();
    if (this.#type.value === "paypal") return { type: "paypal", email: value("email") };
    const optional = (name: string) => (value(name) === "" ? undefined : value(name));
    return {
      type: "wise",
      account_holder_name: value("account_holder_name"),
      iban: optional("iban"),
      email: optional("email"),
      currency: optional("currency")?.toUpperCase(),
      receiver_type: value("receiver_type") === "institution" ? "institution" : "person",
    };
  }

  async #save() {
    this.#clearProblems();
    fill(this.#status, h("p", { class: "muted" }, "Saving…"));
    try {
      this.#render((await this.#context.client.affiliate.payoutMethod.set(this.#request())).data);
      fill(this.#status, h("p", { class: "notice" }, "Saved. Your next payouts go there."));
    } catch (error) {
      this.#status.replaceChildren();
      if (this.#context.signedOut(error)) return;
      const problems = error instanceof ValidationError ? Object.entries(error.fieldErrors) : [];
      let first: Field | undefined;
      for (const [name, messages] of problems) {
        const problem = this.#problems[name];
        if (!problem) continue;
        problem.textContent = messages.join(" ");
        this.#fields[name]?.setAttribute("aria-invalid", "true");
        first ??= this.#fields[name];
      }
      fill(this.#alert, h("p", { class: "error" }, first ? "Check the details marked below." : explain(error)));
      first?.focus();
    }
  }

  async #delete() {
    this.#clearProblems();
    try {
      await this.#context.client.affiliate.payoutMethod.delete();
      this.#render(null);
      fill(this.#status, h("p", { class: "notice" }, "Removed. Payouts wait until you set new details."));
    } catch (error) {
      if (this.#context.signedOut(error)) return;
      fill(this.#alert, h("p", { class: "error" }, explain(error)));
    }
  }

  #clearProblems() {
    this.#alert.replaceChildren();
    for (const [name, problem] of Object.entries(this.#problems)) {
      problem.textContent = "";
      this.#fields[name]?.removeAttribute("aria-invalid");
    }
  }

  #render(method: PayoutMethod | null) {
    this.#remove.toggleAttribute("hidden", method === null);
    if (!method) {
      fill(this.body, h("p", { class: "muted" }, "No payout details yet: set them so your payouts can be sent."));
      return;
    }
    const where =
      method.type === "paypal"
        ? `PayPal: ${method.email ?? ""}`
        : `Wise: ${method.account_holder_name ?? ""}, ${method.iban ?? method.email ?? ""}${method.currency ? ` (${method.currency})` : ""}`;
    fill(this.body, h("p", {}, h("strong", {}, "Paid to "), where));
    this.#type.value = method.type;
    this.#showFields();
  }
}
