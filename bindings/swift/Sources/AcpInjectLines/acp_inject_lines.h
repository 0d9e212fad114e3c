// The per-line receive path of crates/ffi/src/lines.rs: plain C functions beside UniFFI's
// calling convention, which ClientCore.receive(line:) and receive(bytes:) call with the line's
// bytes in place and a buffer on the stack (no allocation on either side of the crossing).
// Declared by hand: UniFFI generates no header for them. The symbols are in the library the
// AcpInjectFFI target links.
#ifndef ACP_INJECT_LINES_H
#define ACP_INJECT_LINES_H

#include <stdint.h>

// Results below zero: -n, the events need n bytes; INT64_MIN + 1, the line is not UTF-8;
// INT64_MIN, a panic inside the library (a bug), caught at the boundary.

// Applies one agent line to the connection of line port `port` (ClientCore.line_port()) and
// writes its events (a list of `Event`, in the boundary encoding) into `out`: the number of
// bytes written, or -n when they need n bytes (then acp_inject_take_spilled, on this thread).
int64_t acp_inject_line_port_receive_into(uint64_t port, const uint8_t *line, uint64_t line_len, uint8_t *out, uint64_t out_cap);

// The same for bytes in any chunking (a read of the agent's output).
int64_t acp_inject_line_port_feed_into(uint64_t port, const uint8_t *bytes, uint64_t len, uint8_t *out, uint64_t out_cap);

// Copies the events the last call of this thread could not fit into `out`.
int64_t acp_inject_take_spilled(uint8_t *out, uint64_t out_cap);

// Releases a line port.
void acp_inject_line_port_free(uint64_t port);

#endif
