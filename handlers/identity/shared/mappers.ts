/** Rows and domain results as the contract's bodies (generated types): the one place the API's shapes are built. */
import type { components } from "../../../generated/types/identity.ts";
import type { AttemptRow } from "../../../server/webhooks/index.ts";
import type { WebhookEventType } from "../domain/events.ts";
import type { OwnedWebhook } from "../domain/webhooks/webhooks-area.ts";
import type { OrganizationUser } from "../domain/accounts/organization-users.ts";
import type { Application } from "../storage/applications.ts";
import type { AuditEventRow, UserRow } from "../storage/schema.ts";

type Schemas = components["schemas"];

/** An application as the API shows it: never a secret or its hash. */
export const toApplication = (a: Application): Schemas["Application"] => ({
  id: a.id,
  organizationId: a.organizationId ?? "",
  name: a.name,
  clientId: a.clientId,
  clientType: a.clientType,
  redirectUris: a.redirectUris,
  allowedScopes: a.allowedScopes as Schemas["Scope"][],
  enabledProviders: a.enabledProviders,
  branding: a.branding,
  enabled: a.enabled,
  allowedOrigins: a.allowedOrigins,
  requireVerifiedEmail: a.requireVerifiedEmail,
  requirePushedAuthorizationRequests: a.requirePushedAuthorizationRequests,
  secondFactor: a.secondFactor ?? "organization",
  apiScopes: a.apiScopes,
  postLogoutRedirectUris: a.postLogoutRedirectUris,
  deviceAuthorization: a.deviceAuthorization,
  clientCredentials: { enabled: a.clientCredentialsEnabled, scopes: a.clientCredentialsScopes },
  resources: a.resources,
  ...(a.tokenEndpointAuthMethod ? { tokenEndpointAuthMethod: a.tokenEndpointAuthMethod } : {}),
  jwks: a.jwks as Schemas["Application"]["jwks"],
  jwksUri: a.jwksUri,
  backchannelLogoutUri: a.backchannelLogoutUri,
  backchannelLogoutSessionRequired: a.backchannelLogoutSessionRequired,
  dpopBoundAccessTokens: a.dpopBoundAccessTokens,
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
});

/** A user row as the API shows it: never the password hash. */
export const toUser = (u: UserRow): Schemas["User"] => ({
  id: u.id,
  email: u.email,
  firstName: u.first_name,
  lastName: u.last_name,
  emailVerified: Boolean(u.email_verified),
  createdAt: u.created_at,
  updatedAt: u.updated_at,
});

/** A webhook as the API shows it, with the name of its application. */
export const toWebhook = ({ row, applicationName }: OwnedWebhook): Schemas["Webhook"] => ({
  id: row.id,
  organizationId: row.organization_id,
  applicationId: row.application_id,
  applicationName,
  url: row.url,
  events: JSON.parse(row.events),
  isActive: Boolean(row.is_active),
  maxRetries: Number(row.max_retries),
  retryDelaySeconds: Number(row.retry_delay_seconds),
  createdAt: row.created_at,
});

/** ID-WH-6: one record per attempt. */
export const toDelivery = (a: AttemptRow): Schemas["WebhookDelivery"] => ({
  id: a.delivery_id,
  attemptId: a.id,
  webhookId: a.endpoint_id,
  eventId: a.event_id,
  event: a.event_type as WebhookEventType,
  statusCode: a.status_code === null ? null : Number(a.status_code),
  success: Boolean(a.success),
  attemptNumber: Number(a.attempt_number),
  deliveredAt: a.attempted_at,
  durationMs: Number(a.duration_ms),
  ...(a.error ? { error: a.error as NonNullable<Schemas["WebhookDelivery"]["error"]> } : {}),
  responseBodyExcerpt: a.response_excerpt,
  nextAttemptAt: a.next_attempt_at,
  trigger: a.trigger,
});

/** X-ID-AUD-1: one event of the audit log as the API shows it. */
export const toAuditEvent = (row: AuditEventRow): Schemas["AuditEvent"] => ({
  id: row.id,
  type: row.type as Schemas["AuditEventType"],
  occurredAt: row.occurred_at,
  actor: { type: row.actor_type as Schemas["AuditActorType"], id: row.actor_id },
  userId: row.user_id,
  applicationId: row.application_id,
  clientAddress: row.client_address,
  userAgent: row.user_agent,
  details: JSON.parse(row.details),
});

/** A user as the organization's admins see them (X-ID-UADM-2): never the password hash. */
export const toOrganizationUser = ({ row, applications }: OrganizationUser): Schemas["OrganizationUser"] => ({
  id: row.id,
  email: row.email,
  firstName: row.first_name,
  lastName: row.last_name,
  emailVerified: Boolean(row.email_verified),
  createdAt: row.created_at,
  lastSignInAt: row.last_sign_in_at ?? null,
  enabled: row.disabled_at === null || row.disabled_at === undefined,
  admin: Boolean(Number(row.is_admin)),
  applications,
});
