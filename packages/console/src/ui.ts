/**
 * The console's building blocks: a status line that says what happened, a confirmation that says
 * what a destructive action will do before it does it, buttons that cannot be pressed twice while
 * their request runs, and tables that fit a phone by scrolling inside themselves.
 */
import { h } from "@affiliate/browser-kit";

type Child = Node | string | null | undefined | false;

/** A live region: what the last action did, or why it failed. */
export class StatusLine {
  readonly element = h("p", { class: "status-line", role: "status", "aria-live": "polite" });

  ok(text: string): void {
    this.element.className = "status-line ok";
    this.element.textContent = text;
  }

  error(text: string): void {
    this.element.className = "status-line error";
    this.element.setAttribute("role", "alert");
    this.element.textContent = text;
  }

  clear(): void {
    this.element.className = "status-line";
    this.element.setAttribute("role", "status");
    this.element.textContent = "";
  }
}

/**
 * Asks once before a change that cannot be undone: the question names the action and what it
 * will do. Resolves true when confirmed, false when cancelled (Escape, the cancel button).
 */
export function confirmAction(options: { title: string; consequence: string; confirm: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = `confirm-${Math.random().toString(36).slice(2)}`;
    const cancelButton = h("button", { type: "button", class: "secondary" }, "Cancel");
    const confirmButton = h("button", { type: "button", class: "danger" }, options.confirm);
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": titleId },
      h("h2", { id: titleId }, options.title),
      h("p", {}, options.consequence),
      h("div", { class: "actions" }, cancelButton, confirmButton),
    );
    let answered = false;
    const answer = (value: boolean) => {
      if (answered) return;
      answered = true;
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    cancelButton.addEventListener("click", () => answer(false));
    confirmButton.addEventListener("click", () => answer(true));
    dialog.addEventListener("close", () => answer(false));
    document.body.append(dialog);
    dialog.showModal();
    cancelButton.focus();
  });
}

/**
 * A button whose click runs `action` once at a time: disabled while it runs, so a double click
 * cannot send a change twice.
 */
export function actionButton(
  text: string,
  action: () => Promise<void>,
  attributes: Record<string, string | boolean | undefined> = {},
): HTMLButtonElement {
  const button = h("button", { type: "button", ...attributes }, text);
  button.addEventListener("click", async () => {
    if (button.disabled) return;
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    try {
      await action();
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  });
  return button;
}

/** A table that scrolls sideways inside its own box on a narrow screen, never the page. */
export function table(headings: string[], rows: HTMLTableRowElement[], empty: string, caption?: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, ...headings.map((heading) => h("th", { scope: "col" }, heading)))),
      h("tbody", {}, ...rows),
    ),
  );
}

export const cell = (...children: Child[]) => h("td", {}, ...children);
export const amountCell = (text: string) => h("td", { class: "amount" }, text);
export const badge = (status: string) => h("span", { class: `badge badge-${status}` }, status.replaceAll("_", " "));

/** A card: a titled section of a screen. */
export function section(title: string, ...children: Child[]): HTMLElement {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}

/** A labelled form field; the label is the field's accessible name. */
export function field(labelText: string, input: HTMLElement, hint?: string): HTMLElement {
  const id = input.id || `field-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, labelText),
    input,
    hint ? h("p", { class: "hint" }, hint) : null,
  );
}

export function select(options: { value: string; text: string }[], selected = ""): HTMLSelectElement {
  const element = h("select", {});
  for (const option of options) {
    element.append(h("option", { value: option.value, selected: option.value === selected }, option.text));
  }
  return element;
}
