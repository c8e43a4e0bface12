/**
 * What the benchmark's server processes and the driver say to each other over the fork IPC
 * channel. Each server runs in its own process, so the load client (the driver) never competes
 * with the server for the event loop, and every server is measured the same way.
 */

/** The confidential client every server registers: client_secret_basic, one redirect URI. */
export interface BenchClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

/** A fresh authorization code and the PKCE verifier of the challenge it was issued with. */
export interface MintedCode {
  code: string;
  verifier: string;
}

/** The scopes every code is issued for: `offline_access`, so the exchange issues and stores a refresh token. */
export const BENCH_SCOPE = "openid email offline_access";

/**
 * The client_credentials row: the confidential client asks, for itself, a token for this API
 * (RFC 8707 `resource`) with this scope; every server registers both, and answers a JWT access
 * token with the resource as its audience and no refresh token.
 */
export const BENCH_API = { resource: "https://api.bench.example", scope: "api:read" } as const;

export type ServerKind = "ours" | "oidc-provider" | "ceiling";

/** Driver → server: what is asked, and the id its reply carries. */
/** `cpu` with a phase brackets a timed run (a profiled server profiles just that run). */
export type CommandBody = { type: "mint"; count: number } | { type: "cpu"; phase: "start" | "end" } | { type: "stop" };
export type Command = CommandBody & { id: number };

/** Server → driver. */
export type Reply =
  | { type: "ready"; url: string; tokenPath: string; client: BenchClient; notes: string; join?: JoinInfo }
  | { id: number; type: "minted"; codes: MintedCode[] }
  /**
   * The server's CPU so far: `micros`, user + system time of every thread (process.cpuUsage());
   * `loopMicros`, the time its event loop was busy (performance.eventLoopUtilization().active),
   * which caps a single-threaded server's rate. For several instances, the sums, and each one's in `perInstance`.
   */
  | { id: number; type: "cpu"; micros: number; loopMicros: number; perInstance?: Array<{ micros: number; loopMicros: number }> }
  | { id: number; type: "stopped" }
  | { id?: number; type: "error"; message: string };

/**
 * What a further instance of a server needs to serve beside the first (BENCH_INSTANCES, ours only):
 * the port they share (SO_REUSEPORT) and the data directory (SQLite) whose database holds the state.
 */
export interface JoinInfo {
  port: number;
  dataDir: string;
}

/** What each kind of server implements (in its own process). */
export interface BenchServer {
  url: string;
  tokenPath: string;
  client: BenchClient;
  /** One line on how this server is configured, printed with the results. */
  notes: string;
  /** Set by a server that further instances can join (the first of several). */
  join?: JoinInfo;
  /** `count` fresh codes, issued in-process through the server's own code-issuing path (not timed). */
  mintCodes(count: number): Promise<MintedCode[]>;
  close(): Promise<void>;
}
