/**
 * Two social providers for a deployment under test (IDENTITY_SOCIAL_PROVIDERS). Never contacted:
 * the browser tests only see them listed (the login page's buttons, the dashboard's checkboxes).
 */
export const SOCIAL_PROVIDERS = [
  {
    id: "acme-sso",
    name: "Acme SSO",
    type: "oauth2",
    clientId: "c1",
    clientSecret: "s1",
    scope: "read:user",
    authorizationEndpoint: "https://sso.acme.example/authorize",
    tokenEndpoint: "https://sso.acme.example/token",
    userinfoEndpoint: "https://sso.acme.example/user",
  },
  {
    id: "other-sso",
    name: "Other SSO",
    type: "oauth2",
    clientId: "c2",
    clientSecret: "s2",
    scope: "read:user",
    authorizationEndpoint: "https://sso.other.example/authorize",
    tokenEndpoint: "https://sso.other.example/token",
    userinfoEndpoint: "https://sso.other.example/user",
  },
];
