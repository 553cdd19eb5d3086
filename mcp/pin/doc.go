// Package pin lets a client pin the tool definitions it approved and
// refuse to call a tool whose definition changed since (a "rug pull": a
// server that was approved with one description, and later tells the
// model something else under the same name).
//
// A Pins value holds, per tool, a digest of what a user approves — the
// name, title, description, input and output schemas and annotations,
// in canonical JSON — and the definition itself, so that a change can be
// shown. It marshals to JSON, to be kept in a file and loaded back.
//
// A Guard, enabled on a Client's options (Enable) and bound to the
// Client (Guard.Bind), checks every tools/call before it is sent against
// the tool's definition in the latest listing the Client made (it lists
// the tools itself, a bounded number of pages, when it has not seen the
// tool listed since the last list_changed). An unchanged tool is called;
// a changed or unpinned one is refused with a *ChangeError naming the
// tool and the changed fields, unless Options.OnChange accepts it, which
// pins the new definition.
//
// The definitions come from the server: a *ChangeError's text holds the
// server's strings, which whoever prints it must sanitize for its
// terminal. See docs/design/pinning.md.
package pin
