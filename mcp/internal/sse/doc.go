// Package sse is the one implementation of Server-Sent Events (the
// text/event-stream format of the WHATWG HTML standard, §9.2) that the
// MCP transports share: the server's 2026-07-28 response streams, the
// 2025-11-25 sessions' resumable streams, and the client that reads them.
//
// It has three parts, each usable alone:
//
//   - Writer writes one SSE response over an http.ResponseWriter: the
//     response head (with the header that turns proxy buffering off),
//     events, priming events, comments (keep-alive). Every write arms a
//     write deadline first and is flushed before it returns, so a client
//     that does not read costs one blocked write for a bounded time; Abort
//     and Shorten, callable from any goroutine, cut that time short.
//   - ReplayLog keeps the recent events of one or more streams, bounded in
//     bytes, events and streams, for a client that reconnects with
//     Last-Event-ID. EventID is the id those events carry, "STREAM-SEQ".
//   - Reader parses an event stream into events, within a bound on each
//     line and on each event's data, and reports distinct errors when a
//     bound is passed instead of buffering without end.
//
// Event is the unit the Writer writes and the Reader returns.
//
// None of the types is safe for concurrent use, except where a method
// says so (Writer.Abort, Writer.Shorten, Writer.Release): callers
// serialize their own use, and never hold a lock that closing a stream
// needs while they write.
package sse
