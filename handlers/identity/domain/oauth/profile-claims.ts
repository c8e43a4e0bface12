/** OpenID Connect standard claims of the `profile` scope (ID-SCOPE-1): in ID tokens and UserInfo alike. */
import type { UserRow } from "../../storage/schema.ts";

export function profileClaims(user: UserRow) {
  return {
    name: [user.first_name, user.last_name].filter(Boolean).join(" "),
    given_name: user.first_name,
    family_name: user.last_name,
    updated_at: Math.floor(Date.parse(user.updated_at) / 1000),
  };
}
