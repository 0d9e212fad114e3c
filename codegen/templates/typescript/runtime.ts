// {{ preamble }}
// Source: codegen/templates/typescript/runtime.ts (the same for every schema).
//
// The decoding runtime the generated validators are built from: small combinators that check a
// JSON value against one schema shape and, on the first problem, throw a `ValidationError`
// naming the member path (`params.update.messageId`). Unknown members are kept, as the schema
// tolerates them; decode-only aliases are rewritten to the schema's spelling.

/** Where a value sits inside the decoded message: member names and array indices. */
export type Path = readonly (string | number)[];

/** `["params", "content", 0, "type"]` → `params.content[0].type`. */
export function formatPath(path: Path): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") {
      out += `[${segment}]`;
    } else {
      out += out === "" ? segment : `.${segment}`;
    }
  }
  return out;
}

/** A value does not match the schema. `path` names the offending member. */
export class ValidationError extends Error {
  readonly path: Path;
  readonly reason: string;

  constructor(path: Path, reason: string) {
    super(path.length === 0 ? reason : `at \`${formatPath(path)}\`: ${reason}`);
    this.name = "ValidationError";
    this.path = path;
    this.reason = reason;
  }
}

/**
 * Something a tolerant member (`x-deserialize-default-on-error`,
 * `x-deserialize-skip-invalid-items`) dropped instead of failing the whole value.
 */
export interface Tolerated {
  readonly path: Path;
  readonly error: ValidationError;
}

/** Options of every `decode…` function. */
export interface DecodeOptions {
  /** Receives what tolerant members dropped; without it, tolerated problems are silent. */
  readonly tolerated?: Tolerated[];
}

/** What a decoder is handed besides the value. */
export interface Context {
  readonly tolerated: Tolerated[] | undefined;
}

/** Checks `value` (found at `path`) and returns it, possibly with aliases rewritten. */
export type Decoder<T> = (value: unknown, path: Path, context: Context) => T;

/** The outcome of `check`: the decoded value, or the first problem. */
export type Checked<T> =
  | { readonly ok: true; readonly value: T; readonly tolerated: readonly Tolerated[] }
  | { readonly ok: false; readonly error: ValidationError };

/** Runs a decoder on a whole value. */
export function run<T>(decoder: Decoder<T>, value: unknown, options?: DecodeOptions, path: Path = []): T {
  return decoder(value, path, { tolerated: options?.tolerated });
}

/** Runs a decoder without throwing. */
export function check<T>(decoder: Decoder<T>, value: unknown, path: Path = []): Checked<T> {
  const tolerated: Tolerated[] = [];
  try {
    return { ok: true, value: decoder(value, path, { tolerated }), tolerated };
  } catch (e) {
    if (e instanceof ValidationError) {
      return { ok: false, error: e };
    }
    throw e;
  }
}

export function fail(path: Path, reason: string): never {
  throw new ValidationError(path, reason);
}

export type JsonObject = { [member: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function has(object: JsonObject, member: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, member);
}

/** How a value is named in an error: `a string "x"`, `an integer 5`, `an array`. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return `a string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case "number":
      return Number.isInteger(value) ? `an integer ${value}` : `a number ${value}`;
    case "boolean":
      return `a boolean ${value}`;
    case "object":
      return "an object";
    default:
      return `a ${typeof value}`;
  }
}

function quoted(values: readonly unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join(", ");
}

// ------------------------------------------------------------------------------------------
// Scalars
// ------------------------------------------------------------------------------------------

export const unknown: Decoder<unknown> = (value) => value;

export const boolean: Decoder<boolean> = (value, path) =>
  typeof value === "boolean" ? value : fail(path, `expected a boolean, got ${describe(value)}`);

export const nullValue: Decoder<null> = (value, path) =>
  value === null ? null : fail(path, `expected null, got ${describe(value)}`);

/** A string, optionally matching `pattern` and of `minLength` to `maxLength` characters
 *  (counted as JSON Schema counts them: code points, not UTF-16 units). */
export function string(pattern?: RegExp, minLength?: number, maxLength?: number): Decoder<string> {
  return (value, path) => {
    if (typeof value !== "string") {
      return fail(path, `expected a string, got ${describe(value)}`);
    }
    if (pattern !== undefined && !pattern.test(value)) {
      return fail(path, `expected a string matching ${pattern.source}, got ${describe(value)}`);
    }
    if (minLength !== undefined || maxLength !== undefined) {
      const length = [...value].length;
      if (minLength !== undefined && length < minLength) {
        return fail(path, `expected at least ${minLength} character(s), got ${length}`);
      }
      if (maxLength !== undefined && length > maxLength) {
        return fail(path, `expected at most ${maxLength} character(s), got ${length}`);
      }
    }
    return value;
  };
}

function bounded(kind: string, value: number, path: Path, minimum?: number, maximum?: number): number {
  if (minimum !== undefined && value < minimum) {
    return fail(path, `expected ${kind} of at least ${minimum}, got ${describe(value)}`);
  }
  if (maximum !== undefined && value > maximum) {
    return fail(path, `expected ${kind} of at most ${maximum}, got ${describe(value)}`);
  }
  return value;
}

export function integer(minimum?: number, maximum?: number): Decoder<number> {
  return (value, path) =>
    typeof value === "number" && Number.isInteger(value)
      ? bounded("an integer", value, path, minimum, maximum)
      : fail(path, `expected an integer, got ${describe(value)}`);
}

export function number(minimum?: number, maximum?: number): Decoder<number> {
  return (value, path) =>
    typeof value === "number" && Number.isFinite(value)
      ? bounded("a number", value, path, minimum, maximum)
      : fail(path, `expected a number, got ${describe(value)}`);
}

/** Any JSON object, members unchecked. */
export const object: Decoder<JsonObject> = (value, path) =>
  isObject(value) ? value : fail(path, `expected an object, got ${describe(value)}`);

export function constant<const T extends string | number | boolean | null>(expected: T): Decoder<T> {
  return (value, path) =>
    value === expected ? expected : fail(path, `expected ${JSON.stringify(expected)}, got ${describe(value)}`);
}

/** A string from a list of values: closed (anything else fails) or open (any string passes). */
export function stringEnum<T extends string>(name: string, known: readonly string[], open: boolean): Decoder<T> {
  return (value, path) => {
    if (typeof value !== "string") {
      return fail(path, `expected a \`${name}\` string, got ${describe(value)}`);
    }
    if (!open && !known.includes(value)) {
      return fail(path, `unknown \`${name}\` value ${JSON.stringify(value)}, expected one of ${quoted(known)}`);
    }
    return value as T;
  };
}

// ------------------------------------------------------------------------------------------
// Combinators
// ------------------------------------------------------------------------------------------

export function nullable<T>(inner: Decoder<T>): Decoder<T | null> {
  return (value, path, context) => (value === null ? null : inner(value, path, context));
}

export interface ArrayRules {
  readonly minItems?: number;
  readonly uniqueItems?: boolean;
}

export function array<T>(item: Decoder<T>, rules: ArrayRules = {}): Decoder<T[]> {
  return (value, path, context) => {
    if (!Array.isArray(value)) {
      return fail(path, `expected an array, got ${describe(value)}`);
    }
    if (rules.minItems !== undefined && value.length < rules.minItems) {
      return fail(path, `expected at least ${rules.minItems} item(s), got ${value.length}`);
    }
    const out = value.map((v, i) => item(v, [...path, i], context));
    if (rules.uniqueItems === true) {
      const seen = new Set<string>();
      out.forEach((v, i) => {
        const key = JSON.stringify(v);
        if (seen.has(key)) {
          fail([...path, i], `items must be unique, ${key} appears twice`);
        }
        seen.add(key);
      });
    }
    return out;
  };
}

/** The type a decoder (or a union of decoders) produces. */
export type DecodedBy<D> = D extends Decoder<infer T> ? T : never;

/** The first branch that accepts the value; otherwise an error at the union's own path. */
export function anyOf<D extends Decoder<unknown>>(name: string, branches: readonly D[]): Decoder<DecodedBy<D>> {
  return (value, path, context) => {
    const problems: string[] = [];
    for (const branch of branches) {
      const tolerated: Tolerated[] = [];
      try {
        const decoded = branch(value, path, { tolerated: context.tolerated === undefined ? undefined : tolerated });
        context.tolerated?.push(...tolerated);
        return decoded as DecodedBy<D>;
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        problems.push(e.message);
      }
    }
    return fail(path, `${describe(value)} matches none of the forms of ${name} (${problems.join("; ")})`);
  };
}

/** A decoder declared further down (a reference cycle between definitions). */
export function lazy<T>(get: () => Decoder<T>): Decoder<T> {
  return (value, path, context) => get()(value, path, context);
}

/** A `$ref` with sibling `required`: the referenced shape, plus members it must carry here. */
export function requiring<T>(inner: Decoder<T>, members: readonly string[]): Decoder<T> {
  return (value, path, context) => {
    const decoded = inner(value, path, context);
    if (isObject(decoded)) {
      for (const m of members) {
        if (!has(decoded, m)) fail([...path, m], `missing member \`${m}\``);
      }
    }
    return decoded;
  };
}

// ------------------------------------------------------------------------------------------
// Objects
// ------------------------------------------------------------------------------------------

/** One member of an object shape. */
export interface Member {
  readonly decode: Decoder<unknown>;
  readonly required?: boolean;
  /** Decode-only spellings (`x-aliases`); the output uses the member's own name. */
  readonly aliases?: readonly string[];
  /** `x-deserialize-default-on-error`: an undecodable value is dropped (absent), not fatal. */
  readonly defaultOnError?: boolean;
  /** `x-deserialize-skip-invalid-items`: undecodable array items are dropped, not fatal. */
  readonly skipInvalidItems?: boolean;
  /** `minItems`/`uniqueItems` of an array member (checked after items are skipped). */
  readonly items?: { readonly decode: Decoder<unknown>; readonly rules: ArrayRules };
}

/** A conditional requirement (`if`/`then` in the schema). */
export interface Rule {
  readonly member: string;
  /** The condition: the member equals this value … */
  readonly equals?: unknown;
  /** … or the member is an array containing it. */
  readonly contains?: unknown;
  /** Members that must then be present. */
  readonly require?: readonly string[];
  /** Members that must then also match these shapes. */
  readonly members?: { readonly [member: string]: Decoder<unknown> };
}

function holds(rule: Rule, object: JsonObject): boolean {
  if (!has(object, rule.member)) return false;
  const value = object[rule.member];
  if ("equals" in rule) return value === rule.equals;
  if ("contains" in rule) return Array.isArray(value) && value.includes(rule.contains);
  return false;
}

function condition(rule: Rule): string {
  if ("equals" in rule) return `\`${rule.member}\` is ${JSON.stringify(rule.equals)}`;
  return `\`${rule.member}\` contains ${JSON.stringify(rule.contains)}`;
}

function tolerate(context: Context, path: Path, error: ValidationError): void {
  context.tolerated?.push({ path, error });
}

function decodeMember(member: Member, value: unknown, path: Path, context: Context): { keep: boolean; value?: unknown } {
  if (member.skipInvalidItems === true && member.items !== undefined && Array.isArray(value)) {
    const kept: unknown[] = [];
    value.forEach((item, i) => {
      try {
        kept.push(member.items!.decode(item, [...path, i], context));
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        tolerate(context, [...path, i], e);
      }
    });
    if (member.items.rules.minItems !== undefined && kept.length < member.items.rules.minItems) {
      const error = new ValidationError(path, `expected at least ${member.items.rules.minItems} item(s), got ${kept.length}`);
      if (member.defaultOnError !== true) throw error;
      tolerate(context, path, error);
      return { keep: false };
    }
    return { keep: true, value: kept };
  }
  if (member.defaultOnError === true) {
    try {
      return { keep: true, value: member.decode(value, path, context) };
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      tolerate(context, path, e);
      return { keep: false };
    }
  }
  return { keep: true, value: member.decode(value, path, context) };
}

/**
 * An object with known members. The result is a shallow copy: known members decoded, aliases
 * renamed, unknown members kept as they are.
 */
export function struct<T>(name: string, members: { readonly [member: string]: Member }, rules: readonly Rule[] = []): Decoder<T> {
  return (value, path, context) => {
    if (!isObject(value)) {
      return fail(path, `expected a \`${name}\` object, got ${describe(value)}`);
    }
    const out: JsonObject = { ...value };
    for (const [key, member] of Object.entries(members)) {
      let present = has(value, key);
      for (const alias of member.aliases ?? []) {
        if (!has(value, alias)) continue;
        if (present) {
          fail([...path, key], `member \`${key}\` is given twice (also as \`${alias}\`)`);
        }
        out[key] = value[alias];
        delete out[alias];
        present = true;
      }
      const at = [...path, key];
      if (!present) {
        if (member.required === true) fail(at, `missing member \`${key}\``);
        continue;
      }
      const decoded = decodeMember(member, out[key], at, context);
      if (decoded.keep) {
        out[key] = decoded.value;
      } else if (member.required === true) {
        fail(at, `member \`${key}\` is required, and its value was dropped as invalid`);
      } else {
        delete out[key];
      }
    }
    for (const rule of rules) {
      if (!holds(rule, out)) continue;
      for (const m of rule.require ?? []) {
        if (!has(out, m)) fail([...path, m], `missing member \`${m}\`, required when ${condition(rule)}`);
      }
      for (const [m, decode] of Object.entries(rule.members ?? {})) {
        if (has(out, m)) out[m] = decode(out[m], [...path, m], context);
      }
    }
    return out as T;
  };
}

/**
 * An object tagged by one member. A known tag (or a decode-only alias of one, rewritten to the
 * schema's spelling) selects the variant's shape; an unknown tag passes unchanged when the
 * union is open (`other`), and fails otherwise.
 */
export function tagged<T>(
  name: string,
  tag: string,
  variants: { readonly [value: string]: Decoder<unknown> },
  aliases: { readonly [alias: string]: string },
  open: boolean,
): Decoder<T> {
  const known = Object.keys(variants);
  return (value, path, context) => {
    if (!isObject(value)) {
      return fail(path, `expected a \`${name}\` object, got ${describe(value)}`);
    }
    const at = [...path, tag];
    if (!has(value, tag)) {
      return fail(at, `missing member \`${tag}\` (the tag of \`${name}\`)`);
    }
    const raw = value[tag];
    if (typeof raw !== "string") {
      return fail(at, `expected a string, got ${describe(raw)}`);
    }
    const canonical = Object.prototype.hasOwnProperty.call(aliases, raw) ? aliases[raw]! : raw;
    if (Object.prototype.hasOwnProperty.call(variants, canonical)) {
      const decoded = variants[canonical]!(canonical === raw ? value : { ...value, [tag]: canonical }, path, context);
      return decoded as T;
    }
    if (!open) {
      return fail(at, `unknown \`${name}\` variant ${JSON.stringify(raw)}, expected one of ${quoted(known)}`);
    }
    return value as T;
  };
}
