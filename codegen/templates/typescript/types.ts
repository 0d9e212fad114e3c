// {{ preamble }}
// Source: spec/acp-inject.schema.json, rendered by codegen/src/typescript.rs.
//
// One type per schema definition. Decode-only aliases (`x-aliases`) never appear here: the
// validators rewrite them to these spellings.

/**
 * A member with patch semantics (`x-tristate`): absent leaves the value unchanged, `null`
 * clears it, a value replaces it. Declare such members optional (`member?: Patch<T>`).
 */
export type Patch<T> = T | null;

declare const unknownTag: unique symbol;

/**
 * The tag of a variant this version does not know (an open union's `other` branch). It is a
 * string at run time; the brand keeps it apart from the known tags in the types.
 */
export type UnknownTag = string & { readonly [unknownTag]: true };

/** A JSON-RPC method name starting with `_`: an extension, whose params are not checked. */
export type ExtensionMethod = `_${string}`;
{% for decl in p.decls %}
{%- match decl %}
{%- when Decl::Interface(i) %}
{{ i.doc_block() }}export interface {{ i.name }} {
{%- for f in i.fields %}
{{ f.doc_block() }}  {{ f.name }}{% if f.optional %}?{% endif %}: {{ f.ty }};
{%- endfor %}
}
{%- when Decl::Alias(a) %}
{{ a.doc_block() }}export type {{ a.name }} = {{ a.ty }};
{%- when Decl::Enum(e) %}
{{ e.doc_block() }}export type {{ e.name }} =
{{ e.body() }};
{%- when Decl::Union(u) %}
{%- for i in u.bodies %}
{{ i.doc_block() }}export interface {{ i.name }} {
{%- for f in i.fields %}
{{ f.doc_block() }}  {{ f.name }}{% if f.optional %}?{% endif %}: {{ f.ty }};
{%- endfor %}
}
{% endfor %}
{{ u.doc_block() }}export type {{ u.name }} =
{%- for v in u.variants %}
  | ({ {{ u.tag_key() }}: {{ v.literal }} } & {{ v.body }})
{%- endfor %}
{%- if u.open %}
  | {{ u.name }}Other
{%- endif %};
{% if u.open %}
/**
 * A `{{ u.name }}` variant this version does not know, kept whole (unknown tags are carried
 * through unchanged; tags starting with `_` are extensions).
 */
export interface {{ u.name }}Other {
  {{ u.tag_key() }}: UnknownTag;
  [member: string]: unknown;
}

/** `{{ u.name }}` without its open branch: narrow with `isKnown{{ u.name }}`, then switch on `{{ u.tag }}`. */
export type Known{{ u.name }} = Exclude<{{ u.name }}, {{ u.name }}Other>;
{% endif %}
{%- endmatch %}
{% endfor %}
// ------------------------------------------------------------------------------------------
// The JSON-RPC envelope, typed by method (`x-method`)
// ------------------------------------------------------------------------------------------

/** The params type of every request method. */
export interface RequestParams {
{%- for m in p.requests() %}
  {{ m.literal() }}: {{ m.params }};
{%- endfor %}
}

/** The result type of every request method. */
export interface ResponseResults {
{%- for m in p.requests() %}
{%- if let Some(r) = m.result %}
  {{ m.literal() }}: {{ r }};
{%- endif %}
{%- endfor %}
}

/** The params type of every notification method. */
export interface NotificationParams {
{%- for m in p.notifications() %}
  {{ m.literal() }}: {{ m.params }};
{%- endfor %}
}

export type RequestMethod = keyof RequestParams;
export type NotificationMethod = keyof NotificationParams;

/** The request methods that may be sent without `params`. */
export type ParamsOptionalMethod = {% for m in p.requests() %}{% if m.params_optional %}{{ m.literal() }} | {% endif %}{% endfor %}never;

/** A request for a method of the schema (`params` may be left out for a `ParamsOptionalMethod`). */
export type RequestMessage<M extends RequestMethod = RequestMethod> = {
  jsonrpc: "2.0";
  id: RequestId;
  method: M;
} & (M extends ParamsOptionalMethod ? { params?: RequestParams[M] } : { params: RequestParams[M] });

/** A notification for a method of the schema. */
export interface NotificationMessage<M extends NotificationMethod = NotificationMethod> {
  jsonrpc: "2.0";
  method: M;
  params: NotificationParams[M];
}

/** A request for an extension method (`_…`). */
export interface ExtensionRequest {
  jsonrpc: "2.0";
  id: RequestId;
  method: ExtensionMethod;
  params?: unknown;
}

/** A notification for an extension method (`_…`). */
export interface ExtensionNotification {
  jsonrpc: "2.0";
  method: ExtensionMethod;
  params?: unknown;
}
{% for g in p.groups %}
/** The methods of `{{ g.name }}` (sent by the {{ g.from }}). */
export type {{ g.method_type() }} = {{ g.method_union() }};

/** A JSON-RPC {% if g.request %}request{% else %}notification{% endif %} the {{ g.from }} sends. */
export type {{ g.name }} =
  | { [M in {{ g.method_type() }}]: {% if g.request %}RequestMessage{% else %}NotificationMessage{% endif %}<M> }[{{ g.method_type() }}]
  | {% if g.request %}ExtensionRequest{% else %}ExtensionNotification{% endif %};
{% endfor %}
/** A successful response; `R` is the result type of the answered method. */
export interface SuccessResponse<R = unknown> {
  jsonrpc: "2.0";
  id: RequestId;
  result: R;
}

/** An error response. */
export interface FailureResponse {
  jsonrpc: "2.0";
  id: RequestId;
  error: ErrorObject;
}

/** A JSON-RPC response: exactly one of `result` or `error`. */
export type JsonRpcResponse = SuccessResponse | FailureResponse;

/** Any single JSON-RPC message of the protocol. */
export type Message = ClientRequest | ClientNotification | AgentRequest | AgentNotification | JsonRpcResponse;

