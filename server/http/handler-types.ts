/**
 * Handler types derived from openapi-typescript's `operations`, so a handler's parameters, body and
 * responses are the generated ones. `HandlerMap<operations, Auth, Deps>` requires exactly one handler
 * per operationId: a missing or extra one is a compile error.
 */

type EmptyIfNever<T> = [T] extends [never] ? Record<string, never> : [T] extends [undefined] ? Record<string, never> : NonNullable<T>;

type ParamsOf<O, K extends "path" | "query" | "header"> = O extends { parameters: infer P }
  ? P extends Partial<Record<K, unknown>>
    ? EmptyIfNever<P[K]>
    : Record<string, never>
  : Record<string, never>;

type ContentOf<T> = T extends { content: infer C } ? C[keyof C] : undefined;

/** The request body of an operation (JSON or form), or undefined when it has none. */
export type RequestBodyOf<O> = O extends { requestBody: infer B }
  ? ContentOf<B>
  : O extends { requestBody?: infer B }
    ? ContentOf<NonNullable<B>> | undefined
    : undefined;

/** One documented response: its status and body (headers optional, checked against the spec in tests). */
export type ResponseOf<O> = O extends { responses: infer R }
  ? {
      [S in keyof R]: S extends number
        ? ContentOf<R[S]> extends undefined
          ? { status: S; body?: undefined; headers?: Record<string, string | string[]> }
          : { status: S; body: ContentOf<R[S]>; headers?: Record<string, string | string[]>; contentType?: string }
        : never;
    }[keyof R]
  : never;

/** Success responses only: errors are thrown as HttpProblem and answered centrally. */
export type SuccessOf<O> = Extract<ResponseOf<O>, { status: 200 | 201 | 202 | 204 | 302 | 303 }>;

/** A request's headers as Node gives them: lower-case names; a repeated header is an array. */
export type RequestHeaders = Record<string, string | string[] | undefined>;

export interface HandlerRequest<O, Auth> {
  params: ParamsOf<O, "path">;
  query: ParamsOf<O, "query">;
  headers: RequestHeaders;
  body: RequestBodyOf<O>;
  /** The principal the operation's security handler returned (undefined for public operations). */
  auth: Auth;
  /** The caller's address, for rate limiting. */
  ip: string;
}

export type Handler<O, Auth, Deps> = (req: HandlerRequest<O, Auth>, deps: Deps) => Promise<SuccessOf<O>>;

export type HandlerMap<Ops, Auth, Deps> = { [K in keyof Ops]: Handler<Ops[K], Auth, Deps> };
