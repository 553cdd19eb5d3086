// Package tasks implements the tasks extension of MCP
// (io.modelcontextprotocol/tasks, SEP-2663) on the public seams of
// package mcp, like mcp/apps: a tools/call may be answered with a task
// handle (resultType "task") that the client polls with tasks/get, feeds
// input through tasks/update and cancels with tasks/cancel.
//
// On a server, Enable turns the extension on and bounds it; a tool opts
// in with the Runtime's Support option, and its handler turns the call
// into a task with Start. Everything before Start is an ordinary call
// (questions asked there are MRTR rounds); everything after it runs in
// the background, and its questions become the task's input_required
// status. A fleet shares a SharedStore (redis/redistasks).
//
// On a client, EnableClient declares the extension on every 2026-07-28
// request and follows a call the server made a task to its result;
// Detached contexts hand the task back as a *PendingError instead, and
// Get returns a Handle for a task known by its id.
//
// See docs/design/tasks.md, and docs/design/extensions.md for the seams
// of package mcp this package is built on.
package tasks
