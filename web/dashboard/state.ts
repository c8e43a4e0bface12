/** What the dashboard learnt at start, shared by the views. */
import type { Schemas } from "./api.ts";

export const state: {
  /** The admin's organization; undefined for a user who administers none (only their account then). */
  organization: Schemas["Organization"] | undefined;
  /** The social providers configured on this deployment. */
  providers: Schemas["ProviderList"]["items"];
  /** A client secret to show once on the next application view (after create). */
  pendingSecret: { appId: string; secret: string; note: string } | undefined;
} = { organization: undefined, providers: [], pendingSecret: undefined };
