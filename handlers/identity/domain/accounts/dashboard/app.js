// The identity dashboard (X-ID-ADM-1): plain browser JavaScript, no build step.
// It is the first-party public client `identity-dashboard`: it signs the admin in through this
// server with Authorization Code + PKCE (RFC 7636, S256), keeps the access token in
// sessionStorage (this tab only, gone when it closes), and calls /api/* with it.
// Every value from the API is put in the page with textContent, never as HTML.

const issuer = location.origin;
const CLIENT_ID = "identity-dashboard";
const REDIRECT_URI = `${issuer}/dashboard`;
const SCOPE = "openid profile email";
const TOKEN_KEY = "identity-dashboard.token";
const PENDING_KEY = "identity-dashboard.pending";
const SCOPES = [
  ["openid", "User id (openid)"],
  ["profile", "Profile: name (profile)"],
  ["email", "Email address (email)"],
  ["offline_access", "Refresh tokens (offline_access)"],
];
const PAGE_SIZE = 20;

const app = document.getElementById("app");
const nav = document.getElementById("account-nav");

// ---------------------------------------------------------------------------------------------
// Small DOM helpers
// ---------------------------------------------------------------------------------------------

/** Creates an element: attributes (on* are listeners), then children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces the main content and moves focus there, so screen readers follow the view change. Absent parts (null) are left out. */
function show(...nodes) {
  app.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
  app.focus();
}

function status(text, kind = "") {
  return h("p", { role: kind === "error" ? "alert" : "status", class: kind }, text);
}

let idCounter = 0;
const nextId = (prefix) => `${prefix}-${++idCounter}`;

/** A labelled input; returns {wrap, input} with an error slot linked by aria-describedby. */
function field(label, input, hint) {
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

function setFieldError(errorId, input, message) {
  const slot = document.getElementById(errorId);
  if (!slot) return;
  slot.textContent = message || "";
  slot.hidden = !message;
  if (input) input.setAttribute("aria-invalid", message ? "true" : "false");
}

// ---------------------------------------------------------------------------------------------
// PKCE sign-in (RFC 7636) and the token
// ---------------------------------------------------------------------------------------------

const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const randomString = (bytes) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

async function startSignIn() {
  if (!crypto.subtle) {
    show(status("Signing in needs a secure context: open the dashboard over https (or on localhost).", "error"));
    return;
  }
  const verifier = randomString(32); // 43 characters, within 43-128
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const state = randomString(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, back: location.hash }));
  const url = new URL("/oauth/authorize", issuer);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString();
  location.assign(url.toString());
}

/** Handles the authorization response in the URL; returns an error message, or "" on success. */
async function completeSignIn(params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  if (!pending || params.get("state") !== pending.state) return "The sign-in response does not belong to this tab (state mismatch). Please sign in again.";
  if (params.has("iss") && params.get("iss") !== issuer) return "The sign-in response came from another issuer. Please sign in again.";
  if (params.has("error")) {
    if (params.get("error") === "access_denied") return "Sign-in was cancelled.";
    return `Sign-in failed: ${params.get("error_description") || params.get("error")}`;
  }
  const res = await fetch("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: params.get("code") || "",
      redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID,
      code_verifier: pending.verifier,
    }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || !body.access_token) return `Sign-in failed: ${body.error_description || body.error || res.status}`;
  const expiresAt = Date.now() + (Number(body.expires_in) || 3600) * 1000;
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify({ accessToken: body.access_token, expiresAt }));
  if (pending.back) location.hash = pending.back;
  return "";
}

function currentToken() {
  const stored = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || "null");
  // A minute of margin: a token about to expire would fail halfway through an edit.
  if (!stored || stored.expiresAt - 60_000 < Date.now()) return undefined;
  return stored.accessToken;
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  location.assign("/logout");
}

function signInAgain(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  nav.replaceChildren();
  show(status(message, "error"), h("p", {}, h("button", { type: "button", onclick: startSignIn }, "Sign in")));
}

// ---------------------------------------------------------------------------------------------
// API
// ---------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.error_description || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

async function api(method, path, body) {
  const token = currentToken();
  if (!token) {
    signInAgain("Your session ended. Please sign in again.");
    throw new ApiError(401, { detail: "signed out" });
  }
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : undefined;
  if (res.status === 401) {
    signInAgain("Your session expired. Please sign in again.");
    throw new ApiError(401, data || {});
  }
  if (!res.ok) throw new ApiError(res.status, data || {});
  return data;
}

/** Shows a problem's field errors next to their inputs (fields such as `body.redirectUris[1]`). */
function showProblem(error, fields, summary) {
  for (const { input, errorId } of Object.values(fields)) setFieldError(errorId, input, "");
  const unplaced = [];
  for (const e of error.problem?.errors || []) {
    const path = e.field.replace(/^body\./, "").replace(/\[(\d+)\]/g, ".$1").split(".");
    const key = path[0] === "branding" ? path[1] : path[0];
    const target = fields[key];
    if (target) {
      const index = path.find((p) => /^\d+$/.test(p));
      setFieldError(target.errorId, target.input, index !== undefined && path[0] !== "branding" ? `Item ${Number(index) + 1}: ${e.message}` : e.message);
    } else unplaced.push(`${e.field}: ${e.message}`);
  }
  summary.replaceChildren(status([error.message, ...unplaced].join(" "), "error"));
}

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

let organization;
let providers = [];

async function route() {
  const [, view, id, sub] = /^#(app|account)?\/?([0-9a-f-]{36})?\/?(webhooks)?$/.exec(location.hash) || [];
  try {
    if (view === "account") return await accountView();
    if (!organization) return await accountView("You do not administer an organization, so there are no applications to manage here.");
    if (view === "app" && id && sub) return await webhooksView(id);
    if (view === "app" && id) return await applicationView(id);
    return await listView(1);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return;
    show(status(`Something went wrong: ${err.message}`, "error"), h("p", {}, h("a", { href: "#" }, "Back to applications")));
  }
}

async function listView(page) {
  const data = await api("GET", `/api/applications?page=${page}&pageSize=${PAGE_SIZE}`);
  const rows = data.items.map((a) =>
    h("tr", {}, h("td", {}, h("a", { href: `#app/${a.id}` }, a.name)), h("td", {}, h("code", {}, a.clientId)), h("td", {}, a.clientType)),
  );
  const pages = Math.max(1, Math.ceil(data.totalCount / PAGE_SIZE));
  show(
    h(
      "section",
      { "aria-labelledby": "apps-title" },
      h("h2", { id: "apps-title" }, `Applications of ${organization.name}`),
      data.items.length
        ? h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Client ID"), h("th", { scope: "col" }, "Type"))), h("tbody", {}, rows))
        : h("p", { class: "muted" }, "No applications yet."),
      pages > 1
        ? h(
            "div",
            { class: "actions" },
            h("button", { type: "button", class: "secondary", disabled: page <= 1, onclick: () => listView(page - 1) }, "Previous page"),
            h("span", {}, `Page ${page} of ${pages}`),
            h("button", { type: "button", class: "secondary", disabled: page >= pages, onclick: () => listView(page + 1) }, "Next page"),
          )
        : null,
    ),
    createForm(),
  );
}

function redirectUrisInput(value = []) {
  return h("textarea", { name: "redirectUris", rows: 4, spellcheck: "false", autocomplete: "off" }, value.join("\n"));
}
const linesOf = (text) => text.split("\n").map((l) => l.trim()).filter(Boolean);
const originsOf = (uris) => [...new Set(uris.map((u) => { try { return new URL(u).origin; } catch { return ""; } }).filter(Boolean))];

/**
 * Browser origins (X-ID-CORS-2): the origins of the redirect URIs (`allowedOrigins: null`), or a
 * list of its own (empty: no page may use the application). `value()` is what the API takes.
 */
function originsFieldset(a) {
  const list = h("textarea", { name: "allowedOrigins", rows: 3, spellcheck: "false", autocomplete: "off", placeholder: "https://app.example.com", "aria-label": "Allowed origins, one per line", "aria-describedby": "origins-hint origins-error" }, (a.allowedOrigins || []).join("\n"));
  const derived = h("input", { type: "radio", name: "originsMode", value: "derived", checked: a.allowedOrigins === null });
  const listed = h("input", { type: "radio", name: "originsMode", value: "listed", checked: a.allowedOrigins !== null });
  const sync = () => (list.disabled = derived.checked);
  derived.addEventListener("change", sync);
  listed.addEventListener("change", sync);
  sync();
  const current = originsOf(a.redirectUris);
  return {
    wrap: h(
      "fieldset",
      {},
      h("legend", {}, "Browser origins (CORS)"),
      h("p", { id: "origins-hint", class: "muted" }, "Pages of these origins may call the token, revocation and userinfo endpoints from the browser (token and revocation: public clients only)."),
      h("label", {}, derived, `The origins of the redirect URIs${current.length ? `: ${current.join(", ")}` : ""}`),
      h("label", {}, listed, "Only these origins, one per line (none: no page)"),
      list,
      h("p", { id: "origins-error", class: "field-error", hidden: true }),
    ),
    input: list,
    errorId: "origins-error",
    value: () => (derived.checked ? null : linesOf(list.value)),
  };
}

function createForm() {
  const summary = h("div", { "aria-live": "polite" });
  const fields = {
    name: field("Name (shown on the login page)", h("input", { type: "text", name: "name", required: true, maxlength: 100 })),
    clientType: field(
      "Client type",
      h("select", { name: "clientType" }, h("option", { value: "confidential" }, "Confidential (server-side: has a client secret)"), h("option", { value: "public" }, "Public (single-page or native app: PKCE, no secret)")),
    ),
    redirectUris: field("Redirect URIs, one per line", redirectUrisInput(), "https, or http on localhost / 127.0.0.1 / [::1]. Matched exactly."),
  };
  const form = h(
    "form",
    {
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const created = await api("POST", "/api/applications", {
            name: fields.name.input.value.trim(),
            clientType: fields.clientType.input.value,
            redirectUris: linesOf(fields.redirectUris.input.value),
          });
          if (created.clientSecret) pendingSecret = { appId: created.id, secret: created.clientSecret, note: "" };
          location.hash = `#app/${created.id}`;
        } catch (err) {
          if (err instanceof ApiError) showProblem(err, fields, summary);
        }
      },
    },
    Object.values(fields).map((f) => f.wrap),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create application")),
  );
  return h("section", { "aria-labelledby": "new-title" }, h("h2", { id: "new-title" }, "New application"), form);
}

/** A secret to show once on the next application view (after create or regenerate). */
let pendingSecret;

function secretNotice(secret, note) {
  return h(
    "div",
    { role: "alert" },
    h("p", {}, h("strong", {}, "New client secret. Copy it now: it is not shown again."), note ? ` ${note}` : ""),
    h("code", { class: "secret", tabindex: "0" }, secret),
    h("button", { type: "button", class: "secondary", onclick: () => navigator.clipboard?.writeText(secret) }, "Copy secret"),
  );
}

async function applicationView(id) {
  const a = await api("GET", `/api/applications/${id}`);
  const summary = h("div", { "aria-live": "polite" });
  const scopeBoxes = SCOPES.map(([value, label]) => h("label", {}, h("input", { type: "checkbox", name: "allowedScopes", value, checked: a.allowedScopes.includes(value) }), label));
  const known = providers.map((p) => p.id);
  const providerList = [...providers, ...a.enabledProviders.filter((id) => !known.includes(id)).map((id) => ({ id, name: `${id} (no longer configured)` }))];
  const providerBoxes = providerList.map((p) => h("label", {}, h("input", { type: "checkbox", name: "enabledProviders", value: p.id, checked: a.enabledProviders.includes(p.id) }), p.name));
  const colour = (name, label, value) => {
    const swatch = h("span", { class: "swatch", "aria-hidden": "true" });
    const input = h("input", { type: "text", name, value: value || "", placeholder: "#1A73E8", pattern: "#[0-9A-Fa-f]{6}", maxlength: 7, autocomplete: "off" });
    const paint = () => (swatch.style.background = /^#[0-9A-Fa-f]{6}$/.test(input.value) ? input.value : "transparent");
    input.addEventListener("input", paint);
    paint();
    const f = field(label, input);
    f.wrap.querySelector("label").append(swatch);
    return f;
  };
  const fields = {
    name: field("Name (shown on the login page)", h("input", { type: "text", name: "name", value: a.name, required: true, maxlength: 100 })),
    redirectUris: field("Redirect URIs, one per line", redirectUrisInput(a.redirectUris), "https, or http on localhost / 127.0.0.1 / [::1]. Matched exactly."),
    allowedOrigins: originsFieldset(a),
    allowedScopes: { wrap: h("fieldset", {}, h("legend", {}, "Allowed scopes"), scopeBoxes, h("p", { id: "scopes-error", class: "field-error", hidden: true })), input: null, errorId: "scopes-error" },
    enabledProviders: {
      wrap: h("fieldset", {}, h("legend", {}, "Social sign-in providers"), providerBoxes.length ? providerBoxes : h("p", { class: "muted" }, "No social providers are configured on this deployment."), h("p", { id: "providers-error", class: "field-error", hidden: true })),
      input: null,
      errorId: "providers-error",
    },
    logoUrl: field("Logo URL", h("input", { type: "url", name: "logoUrl", value: a.branding.logoUrl || "", placeholder: "https://example.com/logo.png" })),
    primaryColor: colour("primaryColor", "Primary colour (#RRGGBB)", a.branding.primaryColor),
    secondaryColor: colour("secondaryColor", "Secondary colour (#RRGGBB)", a.branding.secondaryColor),
  };
  const checked = (name) => [...form.querySelectorAll(`input[name=${name}]:checked`)].map((i) => i.value);
  const form = h(
    "form",
    {
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        const branding = {};
        for (const key of ["logoUrl", "primaryColor", "secondaryColor"]) {
          const value = fields[key].input.value.trim();
          if (value) branding[key] = value;
        }
        try {
          await api("PATCH", `/api/applications/${a.id}`, {
            name: fields.name.input.value.trim(),
            redirectUris: linesOf(fields.redirectUris.input.value),
            allowedOrigins: fields.allowedOrigins.value(),
            allowedScopes: checked("allowedScopes"),
            enabledProviders: checked("enabledProviders"),
            branding,
          });
          for (const f of Object.values(fields)) setFieldError(f.errorId, f.input, "");
          summary.replaceChildren(status("Saved. New sign-ins use these settings at once.", "success"));
        } catch (err) {
          if (err instanceof ApiError) showProblem(err, fields, summary);
        }
      },
    },
    Object.values(fields).map((f) => f.wrap),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save settings")),
  );

  const secretArea = h("div", { "aria-live": "polite" });
  if (pendingSecret?.appId === a.id) secretArea.append(secretNotice(pendingSecret.secret, pendingSecret.note));
  pendingSecret = undefined;
  const overlap = h(
    "select",
    { id: "overlap" },
    h("option", { value: "0" }, "Old secret stops working at once"),
    h("option", { value: "3600" }, "Old secret keeps working for 1 hour"),
    h("option", { value: "86400" }, "Old secret keeps working for 24 hours"),
  );
  const secretSection =
    a.clientType === "confidential"
      ? h(
          "section",
          { "aria-labelledby": "secret-title" },
          h("h2", { id: "secret-title" }, "Client secret"),
          h("p", { class: "muted" }, "The secret is stored hashed and was shown once, when it was made. Regenerate it if it leaked or to rotate it."),
          h("label", { for: "overlap" }, "When regenerating"),
          overlap,
          h(
            "div",
            { class: "actions" },
            h(
              "button",
              {
                type: "button",
                onclick: async () => {
                  if (!confirm(`Regenerate the client secret of ${a.name}?`)) return;
                  try {
                    const r = await api("POST", `/api/applications/${a.id}/regenerate-secret`, { overlapSeconds: Number(overlap.value) });
                    const note = r.previousSecretExpiresAt ? `The previous secret works until ${new Date(r.previousSecretExpiresAt).toLocaleString()}.` : "The previous secret no longer works.";
                    secretArea.replaceChildren(secretNotice(r.clientSecret, note));
                  } catch (err) {
                    if (err instanceof ApiError) secretArea.replaceChildren(status(err.message, "error"));
                  }
                },
              },
              "Regenerate client secret",
            ),
          ),
          secretArea,
        )
      : null;

  show(
    h("p", {}, h("a", { href: "#" }, "← All applications")),
    h(
      "section",
      { "aria-labelledby": "app-title" },
      h("h2", { id: "app-title" }, a.name),
      h("p", {}, "Client ID: ", h("code", {}, a.clientId), " ", h("button", { type: "button", class: "secondary", onclick: () => navigator.clipboard?.writeText(a.clientId) }, "Copy")),
      h("p", { class: "muted" }, `${a.clientType === "public" ? "Public client (PKCE, no secret)" : "Confidential client"} · created ${new Date(a.createdAt).toLocaleString()}`),
      h("p", {}, h("a", { href: `#app/${a.id}/webhooks` }, "Manage webhooks")),
    ),
    h("section", { "aria-labelledby": "settings-title" }, h("h2", { id: "settings-title" }, "Settings"), form),
    secretSection,
    h(
      "section",
      { "aria-labelledby": "danger-title" },
      h("h2", { id: "danger-title" }, "Delete"),
      h("p", { class: "muted" }, "Deleting the application ends its client id at once, with its tokens and webhooks."),
      h(
        "button",
        {
          type: "button",
          class: "danger",
          onclick: async () => {
            if (!confirm(`Delete ${a.name}? This cannot be undone.`)) return;
            await api("DELETE", `/api/applications/${a.id}`);
            location.hash = "#";
          },
        },
        "Delete application",
      ),
    ),
  );
}

async function webhooksView(appId) {
  const a = await api("GET", `/api/applications/${appId}`);
  const [list, catalog] = await Promise.all([api("GET", `/api/applications/${appId}/webhooks?pageSize=100`), api("GET", `/api/applications/${appId}/webhooks/events`)]);
  const eventTypes = catalog.items.map((e) => e.event);
  const secretArea = h("div", { "aria-live": "polite" });
  const base = `/api/applications/${appId}/webhooks`;
  const rows = list.items.map((w) =>
    h(
      "tr",
      {},
      h("td", {}, h("code", {}, w.url)),
      h("td", {}, w.events.join(", ")),
      h("td", {}, w.isActive ? "active" : "paused"),
      h(
        "td",
        {},
        h("div", { class: "actions" },
          h("button", { type: "button", class: "secondary", onclick: async () => { await api("PUT", `${base}/${w.id}`, { isActive: !w.isActive }); await webhooksView(appId); } }, w.isActive ? "Pause" : "Resume"),
          h("button", { type: "button", class: "secondary", onclick: async () => {
            if (!confirm("Regenerate this webhook's signing secret?")) return;
            const r = await api("POST", `${base}/${w.id}/regenerate-secret`, {});
            secretArea.replaceChildren(h("div", { role: "alert" }, h("p", {}, h("strong", {}, "New signing secret. Copy it now: it is not shown again.")), h("code", { class: "secret" }, r.secret)));
          } }, "New secret"),
          h("button", { type: "button", class: "danger", onclick: async () => { if (!confirm(`Delete the webhook to ${w.url}?`)) return; await api("DELETE", `${base}/${w.id}`); await webhooksView(appId); } }, "Delete"),
        ),
      ),
    ),
  );
  const summary = h("div", { "aria-live": "polite" });
  const fields = { url: field("Receiver URL", h("input", { type: "url", name: "url", required: true, placeholder: "https://example.com/webhooks/identity" })) };
  const eventBoxes = eventTypes.map((type) => h("label", {}, h("input", { type: "checkbox", name: "events", value: type, checked: true }), type));
  const form = h(
    "form",
    {
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const events = [...form.querySelectorAll("input[name=events]:checked")].map((i) => i.value);
          const created = await api("POST", base, { url: fields.url.input.value.trim(), events });
          await webhooksView(appId);
          app.querySelector("[data-secret]").replaceChildren(h("div", { role: "alert" }, h("p", {}, h("strong", {}, "Webhook created. Its signing secret, shown once:")), h("code", { class: "secret" }, created.secret)));
        } catch (err) {
          if (err instanceof ApiError) showProblem(err, fields, summary);
        }
      },
    },
    fields.url.wrap,
    h("fieldset", {}, h("legend", {}, "Events"), eventBoxes),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add webhook")),
  );
  secretArea.setAttribute("data-secret", "");
  show(
    h("p", {}, h("a", { href: `#app/${appId}` }, `← ${a.name}`)),
    h(
      "section",
      { "aria-labelledby": "wh-title" },
      h("h2", { id: "wh-title" }, `Webhooks of ${a.name}`),
      h("p", { class: "muted" }, "Each delivery is a signed POST (X-Webhook-Signature: sha256=HMAC of the body with the webhook's secret)."),
      secretArea,
      list.items.length
        ? h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "URL"), h("th", { scope: "col" }, "Events"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")))), h("tbody", {}, rows))
        : h("p", { class: "muted" }, "No webhooks yet."),
    ),
    h("section", { "aria-labelledby": "wh-new" }, h("h2", { id: "wh-new" }, "New webhook"), form),
  );
}

async function accountView(notice) {
  const me = await api("GET", "/api/users/me");
  const summary = h("div", { "aria-live": "polite" });
  const fields = {
    firstName: field("First name", h("input", { type: "text", name: "firstName", value: me.firstName, autocomplete: "given-name", maxlength: 100 })),
    lastName: field("Last name", h("input", { type: "text", name: "lastName", value: me.lastName, autocomplete: "family-name", maxlength: 100 })),
  };
  const form = h(
    "form",
    {
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          await api("PATCH", "/api/users/me", { firstName: fields.firstName.input.value.trim(), lastName: fields.lastName.input.value.trim() });
          summary.replaceChildren(status("Saved.", "success"));
        } catch (err) {
          if (err instanceof ApiError) showProblem(err, fields, summary);
        }
      },
    },
    h("p", {}, "Email: ", h("strong", {}, me.email)),
    Object.values(fields).map((f) => f.wrap),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")),
  );
  show(
    notice ? status(notice) : h("p", {}, h("a", { href: "#" }, "← Applications")),
    h("section", { "aria-labelledby": "me-title" }, h("h2", { id: "me-title" }, "Your account"), form),
    h(
      "section",
      { "aria-labelledby": "del-title" },
      h("h2", { id: "del-title" }, "Delete your account"),
      h("p", { class: "muted" }, "Your account is removed from every application that uses this sign-in."),
      h(
        "button",
        {
          type: "button",
          class: "danger",
          onclick: async () => {
            if (!confirm("Delete your account? This cannot be undone.")) return;
            await api("DELETE", "/api/users/me");
            signOut();
          },
        },
        "Delete my account",
      ),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------------

async function main() {
  const params = new URLSearchParams(location.search);
  if (params.has("code") || params.has("error")) {
    const failure = await completeSignIn(params);
    // The code, state and iss must not stay in the address bar or the history.
    history.replaceState(null, "", `/dashboard${location.hash}`);
    if (failure) return signInAgain(failure);
  }
  if (!currentToken()) return startSignIn();
  try {
    organization = await api("GET", "/api/organizations/current");
    providers = (await api("GET", "/api/providers")).items;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) return;
    organization = undefined; // a user without an organization: only their account
  }
  nav.replaceChildren(
    h("a", { href: "#account" }, "Your account"),
    " ",
    h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out"),
  );
  addEventListener("hashchange", route);
  await route();
}

main().catch((err) => show(status(`The dashboard failed to start: ${err.message}`, "error")));
