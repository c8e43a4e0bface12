/**
 * Small DOM helpers. Every value from the API reaches the page as text (textContent or an
 * attribute), never as HTML.
 */
type Listener = (event: Event) => unknown;
export type Attrs = Record<string, string | number | boolean | Listener | null | undefined>;
export type Child = Node | string | number | null | undefined | false | Child[];

/** Creates an element: attributes (on* are listeners), then children (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = String(value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(el, child);
    else if (child === undefined || child === null || child === false) continue;
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const byId = (id: string): HTMLElement => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
};

/** The main landmark the views fill, and the account navigation in the header. */
export const app = byId("app");
export const nav = byId("account-nav");

/** Replaces the main content and moves focus there, so screen readers follow the view change. */
export function show(...nodes: Array<Node | null | undefined | false>): void {
  app.replaceChildren(...nodes.filter((n): n is Node => n !== null && n !== undefined && n !== false));
  app.focus();
}

/** A status line; an error one is an alert. */
export function status(text: string, kind: "" | "error" | "success" = ""): HTMLParagraphElement {
  return h("p", { role: kind === "error" ? "alert" : "status", class: kind }, text);
}

/** The checked values of a form's checkboxes of one name. */
export const checkedValues = (form: HTMLFormElement, name: string): string[] =>
  [...form.querySelectorAll<HTMLInputElement>(`input[name=${name}]:checked`)].map((i) => i.value);

/** A table with a header row of column names (`scope="col"`) and the given body rows. */
export function dataTable(columns: Child[], rows: Node[]): HTMLTableElement {
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        columns.map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    h("tbody", {}, rows),
  );
}

/** Previous and next buttons around "Page N of M" (and `summary`), or nothing when there is one page. */
export function pager(page: number, pages: number, go: (page: number) => unknown, summary = ""): HTMLDivElement | null {
  if (pages <= 1) return null;
  return h(
    "div",
    { class: "actions" },
    h("button", { type: "button", class: "secondary", disabled: page <= 1, onclick: () => go(page - 1) }, "Previous page"),
    h("span", {}, `Page ${page} of ${pages}${summary}`),
    h("button", { type: "button", class: "secondary", disabled: page >= pages, onclick: () => go(page + 1) }, "Next page"),
  );
}
