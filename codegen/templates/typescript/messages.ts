// {{ preamble }}
// Source: spec/acp-inject.schema.json (`x-method` and the envelope definitions), rendered by
// codegen/src/typescript.rs.
//
// Whole JSON-RPC messages: the method tables and `decodeMessage`, which checks the envelope
// (`jsonrpc`, `id`, `method`, exactly one of `result`/`error`; a JSON-RPC batch, which ACP does
// not use, is refused) and
// the params of every method of the schema. A response's `result` is checked with
// `decodeResult(method, result)`, because a response does not say which method it answers.

import * as d from "./runtime.js";
import type * as T from "./types.js";
import * as v from "./validators.js";

/** The protocol's method names. */
export const methods = {
{%- for m in p.methods %}
  {{ m.constant }}: {{ m.literal() }},
{%- endfor %}
} as const;

interface RequestEntry {
  readonly params: d.Decoder<unknown>;
  readonly paramsType: string;
  /** The method may be sent without `params`. */
  readonly paramsOptional: boolean;
  readonly result: d.Decoder<unknown>;
}

interface NotificationEntry {
  readonly params: d.Decoder<unknown>;
  readonly paramsType: string;
  readonly paramsOptional: boolean;
}

const requests: { readonly [method: string]: RequestEntry } = {
{%- for m in p.requests() %}
{%- if let Some(r) = m.result %}
  {{ m.literal() }}: { params: v.{{ m.params }}$, paramsType: "{{ m.params }}", paramsOptional: {{ m.params_optional }}, result: v.{{ r }}$ },
{%- endif %}
{%- endfor %}
};

const notifications: { readonly [method: string]: NotificationEntry } = {
{%- for m in p.notifications() %}
  {{ m.literal() }}: { params: v.{{ m.params }}$, paramsType: "{{ m.params }}", paramsOptional: {{ m.params_optional }} },
{%- endfor %}
};

/** The request methods of the schema. */
export const requestMethods: readonly T.RequestMethod[] = [{% for m in p.requests() %}{{ m.literal() }}, {% endfor %}];

/** The notification methods of the schema. */
export const notificationMethods: readonly T.NotificationMethod[] = [{% for m in p.notifications() %}{{ m.literal() }}, {% endfor %}];

function own<E>(table: { readonly [method: string]: E }, method: string): E | undefined {
  return Object.prototype.hasOwnProperty.call(table, method) ? table[method] : undefined;
}

export function isRequestMethod(method: string): method is T.RequestMethod {
  return own(requests, method) !== undefined;
}

export function isNotificationMethod(method: string): method is T.NotificationMethod {
  return own(notifications, method) !== undefined;
}

function decodeSingle(value: unknown, path: d.Path, context: d.Context): T.Message {
  if (!d.isObject(value)) {
    return d.fail(path, `expected a JSON-RPC message object, got ${d.describe(value)}`);
  }
  if (value["jsonrpc"] !== "2.0") {
    return d.fail(
      [...path, "jsonrpc"],
      d.has(value, "jsonrpc") ? `\`jsonrpc\` must be "2.0", got ${d.describe(value["jsonrpc"])}` : 'missing member `jsonrpc` (must be "2.0")',
    );
  }
  const hasId = d.has(value, "id");
  if (hasId) {
    v.RequestId$(value["id"], [...path, "id"], context);
  }
  const out: d.JsonObject = { ...value };
  if (d.has(value, "method")) {
    const method = value["method"];
    if (typeof method !== "string") {
      return d.fail([...path, "method"], `expected a method name, got ${d.describe(method)}`);
    }
    const request = own(requests, method);
    const notification = own(notifications, method);
    const entry = request ?? notification;
    if (entry === undefined) {
      if (!method.startsWith("_")) {
        d.fail([...path, "method"], `unknown \`method\` ${JSON.stringify(method)} (extension methods start with \`_\`)`);
      }
      return out as unknown as T.Message;
    }
    if (request !== undefined && !hasId) {
      d.fail([...path, "id"], `\`${method}\` is a request: the message must carry an \`id\``);
    }
    if (request !== undefined && hasId && value["id"] === null) {
      d.fail([...path, "id"], `\`${method}\` is a request: its \`id\` must be a string or an integer, never null`);
    }
    if (notification !== undefined && hasId) {
      d.fail([...path, "id"], `\`${method}\` is a notification: the message must not carry an \`id\``);
    }
    if (d.has(value, "params")) {
      out["params"] = entry.params(value["params"], [...path, "params"], context);
    } else if (!entry.paramsOptional) {
      d.fail([...path, "params"], `missing member \`params\` (\`${method}\` takes a \`${entry.paramsType}\`)`);
    }
    return out as unknown as T.Message;
  }
  if (!hasId) {
    return d.fail([...path, "id"], "missing member `id`: a message without `method` is a response, which echoes the request's `id`");
  }
  const hasResult = d.has(value, "result");
  const hasError = d.has(value, "error");
  if (hasResult && hasError) {
    return d.fail([...path, "error"], "a response carries both `result` and `error`");
  }
  if (!hasResult && !hasError) {
    return d.fail([...path, "result"], "a response carries `result` or `error`");
  }
  if (hasError) {
    out["error"] = v.ErrorObject$(value["error"], [...path, "error"], context);
  }
  return out as unknown as T.Message;
}

const message: d.Decoder<T.Message> = (value, path, context) => {
  if (Array.isArray(value)) {
    return d.fail(path, "a JSON-RPC batch, which ACP does not use");
  }
  return decodeSingle(value, path, context);
};

/**
 * Checks a whole JSON-RPC message: the envelope, and the params of every method of the
 * schema (extension methods, `_…`, pass unchecked). Throws a `ValidationError` naming the
 * offending member (`params.update.messageId`).
 */
export function decodeMessage(value: unknown, options?: d.DecodeOptions): T.Message {
  return d.run(message, value, options);
}

/** `JSON.parse` and `decodeMessage`; a syntax error is a `ValidationError` too. */
export function parseMessage(text: string, options?: d.DecodeOptions): T.Message {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new d.ValidationError([], `not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  return decodeMessage(value, options);
}

/** Checks the `result` of a response to `method` against the method's result type. */
export function decodeResult<M extends T.RequestMethod>(method: M, result: unknown, options?: d.DecodeOptions): T.ResponseResults[M] {
  const entry = own(requests, method);
  if (entry === undefined) {
    throw new d.ValidationError([], `no request method ${JSON.stringify(method)} in the schema`);
  }
  return d.run(entry.result, result, options, ["result"]) as T.ResponseResults[M];
}

/** Checks the `params` of `method` (a request or notification method of the schema). */
export function decodeParams<M extends T.RequestMethod | T.NotificationMethod>(
  method: M,
  params: unknown,
  options?: d.DecodeOptions,
): M extends T.RequestMethod ? T.RequestParams[M] : M extends T.NotificationMethod ? T.NotificationParams[M] : never {
  const entry = own(requests, method) ?? own(notifications, method);
  if (entry === undefined) {
    throw new d.ValidationError([], `no method ${JSON.stringify(method)} in the schema`);
  }
  return d.run(entry.params, params, options, ["params"]) as never;
}

export function isRequest(message: T.Message): message is T.ClientRequest | T.AgentRequest {
  return "method" in message && "id" in message;
}

export function isNotification(message: T.Message): message is T.ClientNotification | T.AgentNotification {
  return "method" in message && !("id" in message);
}

export function isResponse(message: T.Message): message is T.JsonRpcResponse {
  return !("method" in message);
}
