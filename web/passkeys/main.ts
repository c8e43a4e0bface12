/**
 * The passkey forms of the hosted pages (X-ID-PK-7): every `form[data-passkey]` is shown only where
 * WebAuthn is available. On submit it asks the form's `data-options` endpoint for the ceremony's
 * options (with the page's CSRF token), lets the browser create or use the passkey, puts the
 * answer in the hidden `credential` field and submits the form itself: the server answers it as
 * any hosted form (a redirect, or the page again with a message).
 */
import { browserSupportsWebAuthn, startAuthentication, startRegistration } from "@simplewebauthn/browser";

const field = (form: HTMLFormElement, name: string) => form.elements.namedItem(name) as HTMLInputElement | null;

async function optionsOf(form: HTMLFormElement): Promise<unknown> {
  const requestId = field(form, "request_id")?.value;
  const body = { csrf_token: field(form, "csrf_token")?.value ?? "", ...(requestId ? { request_id: requestId } : {}) };
  const res = await fetch(form.dataset.options ?? "", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!res.ok) throw new Error(res.status === 403 ? "The page has expired. Reload it and try again." : "The server could not start it.");
  return res.json();
}

function wire(form: HTMLFormElement): void {
  const status = form.querySelector<HTMLElement>("[data-passkey-status]");
  form.hidden = false;
  const unavailable = form.dataset.unavailable ? document.getElementById(form.dataset.unavailable) : null;
  if (unavailable) unavailable.hidden = true;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (status) status.textContent = "Waiting for your passkey…";
    try {
      const optionsJSON = (await optionsOf(form)) as never;
      const credential =
        form.dataset.passkey === "register" ? await startRegistration({ optionsJSON }) : await startAuthentication({ optionsJSON });
      const target = field(form, "credential");
      if (!target) return;
      target.value = JSON.stringify(credential);
      form.submit();
    } catch (err) {
      if (status) status.textContent = `The passkey was not used: ${err instanceof Error ? err.message : String(err)}`;
    }
  });
}

if (browserSupportsWebAuthn()) for (const form of document.querySelectorAll<HTMLFormElement>("form[data-passkey]")) wire(form);
