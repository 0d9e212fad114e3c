// Every line on a connection, checked with the official SDK's own validators.
//
// The SDK ships the zod schemas it generates from the upstream schemas: the v2 draft's
// (`dist/v2/unstable/schema/zod.gen.js`) and v1's (`dist/v1/schema/zod.gen.js`), the ones its
// connections parse with. They are not among the package's exports, so this module finds them
// next to the entrypoint it resolves. A transcript checks one protocol version's lines.
// Each line is checked against the schema its direction and method call for: requests and
// notifications by their method, responses by the method of the request they answer (tracked
// here by id), errors against `zError`. Methods starting with `_` are extensions: counted and
// listed, not failed.

const entry = import.meta.resolve("@agentclientprotocol/sdk/experimental/v2/unstable");
const z2 = await import(new URL("./schema/zod.gen.js", entry).href);
// ACP v1: the schemas of the SDK's default (stable v1) entrypoint, `dist/v1/schema/zod.gen.js`.
const z1 = await import(new URL("../../v1/schema/zod.gen.js", entry).href);

/** What each side sends in one protocol version, and what each request is answered with. */
function tables(version) {
  if (version === 1) {
    const z = z1;
    return {
      z,
      client: {
        requests: {
          initialize: [z.zInitializeRequest, z.zInitializeResponse],
          authenticate: [z.zAuthenticateRequest, z.zAuthenticateResponse],
          "session/new": [z.zNewSessionRequest, z.zNewSessionResponse],
          "session/load": [z.zLoadSessionRequest, z.zLoadSessionResponse],
          "session/prompt": [z.zPromptRequest, z.zPromptResponse],
          "session/list": [z.zListSessionsRequest, z.zListSessionsResponse],
          "session/resume": [z.zResumeSessionRequest, z.zResumeSessionResponse],
          "session/close": [z.zCloseSessionRequest, z.zCloseSessionResponse],
        },
        notifications: { "session/cancel": z.zCancelNotification, "$/cancel_request": z.zCancelRequestNotification },
      },
      agent: {
        requests: { "session/request_permission": [z.zRequestPermissionRequest, z.zRequestPermissionResponse] },
        notifications: { "session/update": z.zSessionNotification, "$/cancel_request": z.zCancelRequestNotification },
      },
    };
  }
  const z = z2;
  return {
    z,
    client: {
      requests: {
        initialize: [z.zInitializeRequest, z.zInitializeResponse],
        "auth/login": [z.zLoginAuthRequest, z.zLoginAuthResponse],
        "auth/logout": [z.zLogoutAuthRequest, z.zLogoutAuthResponse],
        "session/new": [z.zNewSessionRequest, z.zNewSessionResponse],
        "session/prompt": [z.zPromptRequest, z.zPromptResponse],
        "session/list": [z.zListSessionsRequest, z.zListSessionsResponse],
        "session/resume": [z.zResumeSessionRequest, z.zResumeSessionResponse],
        "session/close": [z.zCloseSessionRequest, z.zCloseSessionResponse],
        "session/status": [z.zSessionStatusRequest, z.zSessionStatusResponse],
      },
      notifications: { "session/cancel": z.zCancelSessionNotification, "$/cancel_request": z.zCancelRequestNotification },
    },
    agent: {
      requests: { "session/request_permission": [z.zRequestPermissionRequest, z.zRequestPermissionResponse] },
      notifications: { "session/update": z.zUpdateSessionNotification, "$/cancel_request": z.zCancelRequestNotification },
    },
  };
}

export class Transcript {
  /** `version`: the protocol version whose schemas check the lines (2 unless given). */
  constructor(version = 2) {
    this.version = version;
    this.schemas = tables(version);
    this.lines = 0;
    this.valid = 0;
    this.extensions = new Map();
    this.problems = [];
    // Requests each side sent, by id, waiting for the other side's answer.
    this.open = { client: new Map(), agent: new Map() };
  }

  /** Checks one line sent by `from` ("client" or "agent"). */
  check(from, line) {
    this.lines += 1;
    let message;
    try {
      message = JSON.parse(line);
    } catch (e) {
      return this.fail(from, line, `not JSON: ${e.message}`);
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      return this.fail(from, line, "not a JSON-RPC object");
    }
    if (message.jsonrpc !== "2.0") return this.fail(from, line, 'jsonrpc is not "2.0"');
    const other = from === "client" ? "agent" : "client";
    const { requests, notifications } = this.schemas[from];
    if (typeof message.method === "string") {
      if (message.method.startsWith("_")) {
        this.extensions.set(message.method, (this.extensions.get(message.method) ?? 0) + 1);
        if ("id" in message) this.open[from].set(JSON.stringify(message.id), message.method);
        return;
      }
      if ("id" in message) {
        const schemas = requests[message.method];
        if (!schemas) return this.fail(from, line, `a request for ${message.method}, which this side does not send`);
        if (typeof message.id !== "string" && typeof message.id !== "number") return this.fail(from, line, "the request id is not a string or number");
        this.open[from].set(JSON.stringify(message.id), message.method);
        return this.parse(from, line, schemas[0], message.params, message.method);
      }
      const schema = notifications[message.method];
      if (!schema) return this.fail(from, line, `a notification ${message.method}, which this side does not send`);
      return this.parse(from, line, schema, message.params, message.method);
    }
    // A response: to one of the other side's requests.
    const key = JSON.stringify(message.id);
    const method = this.open[other].get(key);
    if (method === undefined) return this.fail(from, line, `a response to ${key}, which ${other} never asked (or was already answered)`);
    this.open[other].delete(key);
    if (("result" in message) === ("error" in message)) return this.fail(from, line, "a response needs exactly one of result and error");
    if ("error" in message) return this.parse(from, line, this.schemas.z.zError, message.error, `error for ${method}`);
    if (method.startsWith("_")) {
      this.extensions.set(`${method} (result)`, (this.extensions.get(`${method} (result)`) ?? 0) + 1);
      return;
    }
    const schemas = this.schemas[other].requests[method];
    return this.parse(from, line, schemas[1], message.result, `result of ${method}`);
  }

  parse(from, line, schema, value, what) {
    const result = schema.safeParse(value);
    if (result.success) {
      this.valid += 1;
      return;
    }
    const issues = result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    this.fail(from, line, `${what}: ${issues}`);
  }

  fail(from, line, why) {
    this.problems.push(`${from} sent ${line.length > 300 ? `${line.slice(0, 300)}…` : line}\n    ${why}`);
  }

  /** One line for the log: what was checked and what was not. */
  summary() {
    const ext = [...this.extensions].map(([m, n]) => `${m} ×${n}`).join(", ");
    return `lines: ${this.lines}, valid per the SDK's v${this.version} schemas: ${this.valid}, extension messages: ${ext || "none"}, invalid: ${this.problems.length}`;
  }
}

/**
 * The SDK's stream over a peer's byte streams, with every line both ways checked on
 * `transcript`: `read` comes from the peer (`peer` sent it), `write` goes to it (`self` sent it).
 */
export function tappedStream(ndJsonStream, read, write, transcript, self, peer) {
  const incoming = lineTap((line) => transcript.check(peer, line));
  const outgoing = lineTap((line) => transcript.check(self, line));
  const input = read.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        incoming(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  const writer = write.getWriter();
  const output = new WritableStream({
    async write(chunk) {
      outgoing(chunk);
      await writer.write(chunk);
    },
    async close() {
      await writer.close();
    },
  });
  return ndJsonStream(output, input);
}

/** A line splitter for a byte stream: calls `each` with every complete line (no ending). */
export function lineTap(each) {
  const decoder = new TextDecoder();
  let partial = "";
  return (chunk) => {
    partial += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = partial.indexOf("\n")) >= 0) {
      const line = partial.slice(0, at).replace(/\r$/, "");
      partial = partial.slice(at + 1);
      if (line.trim() !== "") each(line);
    }
  };
}

/**
 * A message stream (the SDK's remote transports: `createHttpStream`, `createWebSocketStream`,
 * or a connection `AcpServer` hands an agent) with every message both ways checked on
 * `transcript` as the line it is: what `stream.readable` yields came from `peer`, what is
 * written to `stream.writable` is `self`'s.
 */
export function tappedMessages(stream, transcript, self, peer) {
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        transcript.check(peer, JSON.stringify(message));
        controller.enqueue(message);
      },
    }),
  );
  const writer = stream.writable.getWriter();
  const writable = new WritableStream({
    async write(message) {
      transcript.check(self, JSON.stringify(message));
      await writer.write(message);
    },
    async close() {
      await writer.close();
    },
    async abort(reason) {
      await writer.abort(reason);
    },
  });
  return { readable, writable };
}
