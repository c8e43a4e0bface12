/** Labelled form fields with an error slot, and the API's problems shown next to them. */
import { ApiError } from "../api.ts";
import { h, status, type Child } from "../dom.ts";

/** A field of a form: what wraps it, the input (if it is one), and the slot its error goes to. */
export interface Field {
  wrap: HTMLElement;
  input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | null;
  errorId: string;
}

let idCounter = 0;
const nextId = (prefix: string) => `${prefix}-${++idCounter}`;

/** A labelled input with an error slot (and an optional hint) linked by aria-describedby. */
export function field<I extends HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>(
  label: string,
  input: I,
  hint?: string,
): Field & { input: I } {
  const id = input.id || nextId("f");
  input.id = id;
  const errorId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : undefined;
  input.setAttribute("aria-describedby", [hintId, errorId].filter(Boolean).join(" "));
  const wrap = h(
    "div",
    {},
    h("label", { for: id }, label),
    hint ? h("p", { id: hintId, class: "muted" }, hint) : null,
    input,
    h("p", { id: errorId, class: "field-error", hidden: true }),
  );
  return { wrap, input, errorId };
}

/** A checkbox with its label beside it and an error slot linked by aria-describedby. */
export function checkboxField(label: string, name: string, checked: boolean): Field & { input: HTMLInputElement } {
  const input = h("input", { type: "checkbox", name, value: "true", checked, id: nextId("f") });
  const errorId = `${input.id}-error`;
  input.setAttribute("aria-describedby", errorId);
  const wrap = h("div", {}, h("label", { class: "check" }, input, label), h("p", { id: errorId, class: "field-error", hidden: true }));
  return { wrap, input, errorId };
}

/** A fieldset around related fields, with a legend and a hint linked to it by aria-describedby. */
export function fieldGroup(legend: string, hint: string, fields: Field[]): HTMLFieldSetElement {
  const hintId = nextId("group-hint");
  return h(
    "fieldset",
    { class: "group", "aria-describedby": hintId },
    h("legend", {}, legend),
    h("p", { id: hintId, class: "muted" }, hint),
    fields.map((f) => f.wrap),
  );
}

export function setFieldError(field: Field, message: string): void {
  const slot = document.getElementById(field.errorId);
  if (!slot) return;
  slot.textContent = message;
  slot.hidden = !message;
  field.input?.setAttribute("aria-invalid", message ? "true" : "false");
}

export const clearFieldErrors = (fields: Record<string, Field>) => {
  for (const f of Object.values(fields)) setFieldError(f, "");
};

/** Shows a problem's field errors next to their inputs (fields such as `body.redirectUris[1]`), the rest in the summary. */
export function showProblem(error: ApiError, fields: Record<string, Field>, summary: HTMLElement): void {
  clearFieldErrors(fields);
  const unplaced: string[] = [];
  for (const e of error.problem.errors ?? []) {
    const path = e.field
      .replace(/^body\./, "")
      .replace(/\[(\d+)\]/g, ".$1")
      .split(".");
    const key = path[0] === "branding" ? path[1] : path[0];
    const target = key === undefined ? undefined : fields[key];
    if (target) {
      const index = path.find((p) => /^\d+$/.test(p));
      setFieldError(target, index !== undefined && path[0] !== "branding" ? `Item ${Number(index) + 1}: ${e.message}` : e.message);
    } else unplaced.push(`${e.field}: ${e.message}`);
  }
  summary.replaceChildren(status([error.message, ...unplaced].join(" "), "error"));
}

/** The non-empty trimmed lines of a textarea. */
export const linesOf = (text: string): string[] =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);

/**
 * A form that saves through the API. No browser validation (`novalidate`): the API's own messages
 * are the ones shown, by the fields they name; `submit` gets the form to read its checkboxes.
 */
export function apiForm(
  fields: Record<string, Field>,
  summary: HTMLElement,
  submit: (form: HTMLFormElement) => Promise<void>,
  ...children: Child[]
): HTMLFormElement {
  const form: HTMLFormElement = h(
    "form",
    {
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        // The last outcome goes as the request leaves: a "Saved." still on screen would claim this save too.
        summary.replaceChildren(status("Saving…"));
        try {
          await submit(form);
        } catch (err) {
          if (err instanceof ApiError) showProblem(err, fields, summary);
          else throw err;
        }
      },
    },
    ...children,
  );
  return form;
}
