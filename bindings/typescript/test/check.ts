// Every example of spec/examples/ and every JSON-RPC message of spec/vectors/ through the
// generated validators of @acp-inject/schema.
//
//   node build/check.js REPO_ROOT
//
// - valid examples decode (a `result` also against the answered method's result type, as
//   spec/README.md asks), nothing is tolerated, and the decoded value equals the input;
// - invalid examples fail, and the error (or what a tolerant member dropped) names the member
//   listed in spec/examples/invalid-members.json, the table the Rust test reads too;
// - every JSON-RPC message of the conformance vectors decodes; a client message the vector
//   expects to be refused with -32600/-32602 (or -32601 for a method the schema does not
//   have) must be refused, unless the step says `schemaValid`; a message whose tolerant
//   members fall back still decodes (the vectors exercise exactly that).
//
// Prints `N passed, N failed` per part and exits non-zero on any failure.

import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";

import {
  decodeMessage,
  decodeResult,
  isNotificationMethod,
  isRequestMethod,
  ValidationError,
  type Message,
  type RequestMethod,
  type Tolerated,
} from "@acp-inject/schema";

const root = process.argv[2];
if (root === undefined) {
  console.error("usage: node build/check.js REPO_ROOT");
  process.exit(2);
}

type Json = unknown;

interface Tally {
  passed: number;
  failed: string[];
}

function tally(): Tally {
  return { passed: 0, failed: [] };
}

function readJson(path: string): Json {
  return JSON.parse(readFileSync(path, "utf8")) as Json;
}

function jsonFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      out.push(...jsonFiles(path));
    } else if (name.endsWith(".json")) {
      out.push(path);
    }
  }
  return out;
}

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What went wrong, or `undefined` when the value decoded cleanly. */
interface Problem {
  readonly path: readonly (string | number)[];
  readonly text: string;
  /** Only a tolerant member fell back: the message as a whole decoded. */
  readonly tolerated?: boolean;
}

function problemOf(run: (tolerated: Tolerated[]) => void): Problem | undefined {
  const tolerated: Tolerated[] = [];
  try {
    run(tolerated);
  } catch (e) {
    if (e instanceof ValidationError) return { path: e.path, text: e.message };
    throw e;
  }
  const first = tolerated[0];
  return first === undefined ? undefined : { path: first.path, text: `tolerated: ${first.error.message}`, tolerated: true };
}

/**
 * Whether a problem names the member: the last member name of its path, or a whole word of its
 * text (a tolerant member's path stops at the member that fell back; its error names the inner one).
 */
function namesMember(problem: Problem, member: string): boolean {
  const names = problem.path.filter((s): s is string => typeof s === "string");
  if (names[names.length - 1] === member) return true;
  return new RegExp(`(^|[^A-Za-z0-9_])${member.replace(/[$]/g, "\\$")}($|[^A-Za-z0-9_])`).test(problem.text);
}

// ------------------------------------------------------------------------------------------
// Examples
// ------------------------------------------------------------------------------------------

type Kind = "request" | "notification" | "result" | "error" | "batch";

/** `<method>.<kind>[.<case>].json` or `batch.<case>.json` (spec/README.md). */
function parseName(file: string): { method: string; kind: Kind } {
  const stem = file.replace(/\.json$/, "");
  if (stem.startsWith("batch.")) return { method: "", kind: "batch" };
  const parts = stem.split(".");
  const kinds = ["request", "notification", "result", "error"];
  for (const at of [parts.length - 1, parts.length - 2]) {
    const part = parts[at];
    if (at > 0 && part !== undefined && kinds.includes(part)) {
      return { method: parts.slice(0, at).join("/"), kind: part as Kind };
    }
  }
  throw new Error(`${file}: no <kind> segment`);
}

/** The whole check of one example: the envelope, then a `result` against its file's method. */
function decodeExample(value: Json, file: string, tolerated: Tolerated[]): Message {
  const { method } = parseName(file);
  const decoded = decodeMessage(value, { tolerated });
  if ("method" in decoded || !("result" in decoded)) return decoded;
  if (!isRequestMethod(method)) throw new Error(`${file}: no request method for the response`);
  (decoded as { result: unknown }).result = decodeResult(method, decoded.result, { tolerated });
  return decoded;
}

function checkValidExamples(): Tally {
  const t = tally();
  const dir = join(root!, "spec/examples/valid");
  for (const path of jsonFiles(dir)) {
    const file = path.slice(dir.length + 1);
    const value = readJson(path);
    let decoded: Message | undefined;
    const problem = problemOf((tolerated) => {
      decoded = decodeExample(value, file, tolerated);
    });
    if (problem !== undefined) {
      t.failed.push(`${file}: rejected: ${problem.text}`);
    } else if (!isDeepStrictEqual(decoded, value)) {
      t.failed.push(`${file}: decodes to a different value: ${JSON.stringify(decoded)}`);
    } else {
      t.passed += 1;
    }
  }
  return t;
}

function checkInvalidExamples(): Tally {
  const t = tally();
  const dir = join(root!, "spec/examples/invalid");
  const table = readJson(join(root!, "spec/examples/invalid-members.json"));
  const rows = isObject(table) && isObject(table["examples"]) ? table["examples"] : {};
  const files = jsonFiles(dir).map((p) => p.slice(dir.length + 1));
  for (const listed of Object.keys(rows)) {
    if (!files.includes(listed)) t.failed.push(`invalid-members.json lists ${listed}, which does not exist`);
  }
  for (const file of files) {
    const row = rows[file];
    const member = isObject(row) ? row["member"] : undefined;
    if (typeof member !== "string") {
      t.failed.push(`${file}: not listed in spec/examples/invalid-members.json`);
      continue;
    }
    const value = readJson(join(dir, file));
    const problem = problemOf((tolerated) => {
      decodeExample(value, file, tolerated);
    });
    if (problem === undefined) {
      t.failed.push(`${file}: accepted`);
    } else if (!namesMember(problem, member)) {
      t.failed.push(`${file}: the error does not name \`${member}\`: ${problem.text}`);
    } else {
      t.passed += 1;
    }
  }
  return t;
}

// ------------------------------------------------------------------------------------------
// Conformance vectors
// ------------------------------------------------------------------------------------------

/** A capture (`$m1`) stands for an agent-minted value; `$$x` is the literal `$x`. */
const CAPTURE = /^\$[A-Za-z_][A-Za-z0-9_]*$/;

function unescapeLiterals(value: Json): Json {
  if (typeof value === "string") return value.startsWith("$$") ? value.slice(1) : value;
  if (Array.isArray(value)) return value.map(unescapeLiterals);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unescapeLiterals(v)]));
  return value;
}

function at(value: Json, path: readonly (string | number)[]): Json {
  let here: Json = value;
  for (const segment of path) {
    if (Array.isArray(here) && typeof segment === "number") here = here[segment];
    else if (isObject(here) && typeof segment === "string") here = here[segment];
    else return undefined;
  }
  return here;
}

function replaced(value: Json, path: readonly (string | number)[], by: Json): Json {
  if (path.length === 0) return by;
  const [head, ...rest] = path;
  if (Array.isArray(value) && typeof head === "number") return value.map((v, i) => (i === head ? replaced(v, rest, by) : v));
  if (isObject(value) && typeof head === "string") return { ...value, [head]: replaced(value[head], rest, by) };
  return value;
}

/**
 * Decodes a vector message. A capture stands for any JSON string or number (the vector format),
 * so when the problem sits exactly on a capture, the capture is tried as a number too.
 */
function vectorProblem(message: Json, check: (message: Json, tolerated: Tolerated[]) => void): Problem | undefined {
  let candidate = message;
  for (let attempt = 0; attempt < 16; attempt += 1) {
    const problem = problemOf((tolerated) => check(candidate, tolerated));
    if (problem === undefined) return undefined;
    const there = at(candidate, problem.path);
    if (typeof there !== "string" || !CAPTURE.test(there)) return problem;
    candidate = replaced(candidate, problem.path, 1);
  }
  return { path: [], text: "too many captures in failing positions" };
}

/** The code a refusal of `message` carries in the step's expectations, if any. */
function refusalCode(expect: Json, id: Json): number | undefined {
  if (!Array.isArray(expect)) return undefined;
  // The responses to a batch come as one array among the expected lines (R-WIRE-5).
  for (const out of expect.flatMap((e) => (Array.isArray(e) ? e : [e]))) {
    if (isObject(out) && isDeepStrictEqual(out["id"], id) && isObject(out["error"]) && typeof out["error"]["code"] === "number") {
      return out["error"]["code"];
    }
  }
  return undefined;
}

/** Whether the validators must refuse a client message the agent answers with `code`. */
function mustRefuse(message: Json, code: number | undefined): boolean {
  if (code === -32600 || code === -32602 || code === -32700) return true;
  if (code === -32601 && isObject(message) && typeof message["method"] === "string") {
    const method = message["method"];
    return !method.startsWith("_") && !isRequestMethod(method) && !isNotificationMethod(method);
  }
  return false;
}

function checkVectors(): Tally {
  const t = tally();
  const dir = join(root!, "spec/vectors");
  for (const path of jsonFiles(dir)) {
    const file = path.slice(dir.length + 1);
    const vector = readJson(path);
    // A client-side vector whose agent speaks ACP v1: every line is v1's wire (the Rust vector
    // test checks them against the vendored v1 schema).
    if (isObject(vector) && vector["side"] === "client" && vector["protocolVersion"] === 1) continue;
    const steps = isObject(vector) && Array.isArray(vector["steps"]) ? vector["steps"] : [];
    // The method of each request id seen so far: what a response answers.
    const methodOf = new Map<string, string>();
    // The connections that negotiated ACP v1, and who asked each request: their lines are v1's
    // wire, which these v2 validators do not describe (the Rust vector test checks them against
    // the vendored v1 schema).
    const v1 = new Set<string>();
    const askedBy = new Map<string, string>();
    steps.forEach((step, index) => {
      if (!isObject(step)) return;
      const nextExpect = steps.slice(index + 1).find((s) => isObject(s) && "expect" in s);
      const outgoing: { message: Json; where: string; refuse: boolean }[] = [];
      const from = typeof step["from"] === "string" ? step["from"] : "c1";
      for (const key of ["client", "receive", "sends"]) {
        if (!(key in step)) continue;
        const line = unescapeLiterals(step[key]);
        // A batch (R-WIRE-5) is served entry by entry: each message object is checked as a
        // line of its own; an entry that is no message object is refused by the agent (-32600,
        // id null) and is nothing these validators describe.
        const batch = Array.isArray(line);
        const entries = batch ? line.map((m, i) => [m, `[${i}]`] as const).filter(([m]) => isObject(m)) : [[line, ""] as const];
        for (const [message, entry] of entries) {
        if (key === "client" && isObject(message)) {
          if ("id" in message) askedBy.set(JSON.stringify(message["id"]), from);
          if (message["method"] === "initialize") {
            const params = message["params"];
            if (isObject(params) && params["protocolVersion"] === 1) v1.add(from);
            else v1.delete(from);
          }
          if (v1.has(from)) continue;
        }
        const id = isObject(message) ? message["id"] : undefined;
        const code = key === "client" && id !== undefined && isObject(nextExpect) ? refusalCode(nextExpect["expect"], id) : undefined;
        // -32022: the agent reads the version before the shape (R-INIT-1), so the message may be
        // another version's, which this version's validators do not describe.
        if (code === -32022) continue;
        // `schemaValid`: the agent refuses a well-formed request for what it says (a relative
        // path, an unknown cursor…), which no schema can see (spec/vectors/README.md).
        const refuse = key === "client" && step["schemaValid"] !== true && mustRefuse(message, code);
        outgoing.push({ message, where: `step ${index} (${key}${entry})`, refuse });
        }
      }
      if (Array.isArray(step["expectSent"])) {
        step["expectSent"].forEach((out, i) => {
          outgoing.push({ message: unescapeLiterals(out), where: `step ${index} (expectSent[${i}])`, refuse: false });
        });
      }
      if (Array.isArray(step["expect"])) {
        const lines: [Json, string][] = [];
        step["expect"].forEach((out, i) => {
          if (Array.isArray(out)) out.forEach((o, j) => lines.push([o, `${i}][${j}`]));
          else lines.push([out, `${i}`]);
        });
        lines.forEach(([out, i]) => {
          if (!isObject(out) || !("jsonrpc" in out)) return; // runtime actions
          const { to: routing, ...message } = out;
          const to = typeof routing === "string" ? routing : Array.isArray(routing) ? routing[0] : "method" in out ? undefined : askedBy.get(JSON.stringify(out["id"]));
          if (typeof to === "string" && v1.has(to)) return;
          outgoing.push({ message: unescapeLiterals(message), where: `step ${index} (expect[${i}])`, refuse: false });
        });
      }
      for (const { message, where, refuse } of outgoing) {
        if (isObject(message) && typeof message["method"] === "string" && "id" in message) {
          methodOf.set(JSON.stringify(message["id"]), message["method"]);
        }
        const problem = vectorProblem(message, (candidate, tolerated) => {
          const decoded = decodeMessage(candidate, { tolerated });
          if (Array.isArray(decoded) || "method" in decoded || !("result" in decoded) || !isObject(candidate)) return;
          const method = methodOf.get(JSON.stringify(candidate["id"]));
          if (method === undefined || !isRequestMethod(method)) return;
          decodeResult(method as RequestMethod, decoded.result, { tolerated });
        });
        // spec/README.md: clients still accept a prompt result without `messageId` (an agent
        // before alpha.5); the vector prompt-empty-result-correlated-by-content plays one.
        const alpha3Prompt =
          problem !== undefined &&
          isObject(message) &&
          methodOf.get(JSON.stringify(message["id"])) === "session/prompt" &&
          isDeepStrictEqual(message["result"], {});
        if (refuse) {
          if (problem === undefined) t.failed.push(`${file}: ${where}: accepted, but the vector expects it refused as invalid`);
          else t.passed += 1;
        } else if (problem !== undefined && problem.tolerated !== true && !alpha3Prompt) {
          t.failed.push(`${file}: ${where}: ${problem.text}`);
        } else {
          t.passed += 1;
        }
      }
    });
  }
  return t;
}

// ------------------------------------------------------------------------------------------

function report(name: string, t: Tally): void {
  for (const f of t.failed) console.log(`FAILED ${name}: ${f}`);
  console.log(`${name}: ${t.passed} passed, ${t.failed.length} failed`);
}

const valid = checkValidExamples();
const invalid = checkInvalidExamples();
const vectors = checkVectors();
report("valid examples", valid);
report("invalid examples", invalid);
report("vector messages", vectors);
const examples: Tally = { passed: valid.passed + invalid.passed, failed: [...valid.failed, ...invalid.failed] };
console.log(`examples: ${examples.passed} passed, ${examples.failed.length} failed`);
console.log(`vectors: ${vectors.passed} passed, ${vectors.failed.length} failed`);
process.exit(examples.failed.length + vectors.failed.length === 0 ? 0 : 1);
