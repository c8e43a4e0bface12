/** The views by URL fragment: `#` (applications), `#app/<id>`, `#app/<id>/webhooks`, `#account`, `#users`, `#user/<id>`. */
import { ApiError } from "./api.ts";
import { h, show, status } from "./dom.ts";
import { state } from "./state.ts";
import { accountView } from "./views/account.ts";
import { applicationView } from "./views/application.ts";
import { listView } from "./views/list.ts";
import { webhooksView } from "./views/webhooks.ts";
import { usersView } from "./views/users.ts";
import { userView } from "./views/user.ts";

export async function route(): Promise<void> {
  const [, view, id, sub] = /^#(app|account|users|user)?\/?([0-9a-f-]{36})?\/?(webhooks)?$/.exec(location.hash) ?? [];
  try {
    if (view === "account") return await accountView();
    if (!state.organization)
      return await accountView("You do not administer an organization, so there are no applications to manage here.");
    if (view === "app" && id && sub) return await webhooksView(id);
    if (view === "app" && id) return await applicationView(id);
    if (view === "users") return await usersView();
    if (view === "user" && id) return await userView(id);
    return await listView(1);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // already asked to sign in again
    show(status(`Something went wrong: ${(err as Error).message}`, "error"), h("p", {}, h("a", { href: "#" }, "Back to applications")));
  }
}
