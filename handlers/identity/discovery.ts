/** Handlers of discovery: jwks, authorizationServerMetadata, openidConfiguration. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const discoveryHandlers: Pick<IdentityHandlers, "jwks" | "authorizationServerMetadata" | "openidConfiguration"> = {
  jwks: notBuilt,
  authorizationServerMetadata: notBuilt,
  openidConfiguration: notBuilt,
};
