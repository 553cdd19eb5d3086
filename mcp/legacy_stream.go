package mcp

import (
	"context"
	"errors"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// 2025-11-25 on stdio (and any stream with the stdio framing): the
// connection is the session. initialize opens it; later requests without
// the modern _meta envelope are served in the legacy era; the client's
// answers to server-to-client requests arrive as response lines; list
// changes and subscribed resource updates are written as notification
// lines once the client sent notifications/initialized. A request with
// the modern envelope stays modern on the same connection.

// legacyMessage handles a line the modern path rejected, when it is
// 2025-11-25 traffic: initialize, a request of the connection's session,
// or a response to one of the session's requests. It reports whether it
// handled the line.
func (c *streamConn) legacyMessage(ctx context.Context, line []byte) bool {
	if !c.s.legacyEnabled() {
		return false
	}
	msg, e := jsonrpc.Decode(line)
	if e != nil {
		return false
	}
	ls := c.legacy.Load()
	switch {
	case msg.IsResponse():
		if ls == nil {
			return false
		}
		ls.deliver(msg)
		return true
	case !msg.IsRequest() || hasModernMeta(msg.Params):
		return false
	case msg.Method == MethodInitialize:
		if ls != nil {
			c.writeMsg(jsonrpc.AppendError(nil, msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: this connection is already initialized")))
			return true
		}
		p, f := decodeInitialize(msg.Params)
		if f != nil {
			c.writeMsg(appendFailure(nil, msg.ID, f))
			return true
		}
		ls = c.s.newLegacySession("", p)
		ls.unrelated = func(method string, params any) { _ = c.writeNotification(method, params) }
		c.legacy.Store(ls)
		c.writeMsg(c.s.initializeResult(msg.ID, ls))
		return true
	case ls == nil:
		return false
	}
	call, f := c.s.decodeLegacy(msg, ls.scope())
	if f != nil {
		c.writeMsg(appendFailure(nil, msg.ID, f))
		return true
	}
	c.run(ctx, call)
	return true
}

// legacyNotification handles a client notification of the session.
func (c *streamConn) legacyNotification(msg jsonrpc.Message) {
	ls := c.legacy.Load()
	if ls == nil || msg.Method != NotificationInitialized || ls.isInitialized() {
		return
	}
	ls.setInitialized()
	// From now on, list changes and resource updates go to the client.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			select {
			case <-ls.ctx.Done():
				return
			case ch := <-ls.listener.ch:
				m, p := changeNotification(ch)
				_ = c.writeNotification(m, p)
			}
		}
	}()
}

// endLegacy ends the connection's session when its input ends: no answer
// can come any more, so questions waiting for one fail at once.
func (c *streamConn) endLegacy() {
	if ls := c.legacy.Load(); ls != nil {
		ls.close()
	}
}

func (c *streamConn) writeNotification(method string, params any) error {
	b, err := encodeNotification(nil, method, params)
	if err != nil {
		return err
	}
	return c.writeMsg(b)
}

// The stream's outbound carries server-to-client requests of a legacy
// request on the connection itself.

func (o *streamOut) backChannel() (bool, string) { return true, "" }

var errRequestDone = errors.New("mcp: the request is finished or cancelled")

func (o *streamOut) sendRequest(msg []byte, late bool) error {
	if !late && o.ctx.Err() != nil {
		return errRequestDone
	}
	b := append(msg, '\n')
	o.c.wmu.Lock()
	defer o.c.wmu.Unlock()
	if !late && o.ctx.Err() != nil {
		return errRequestDone
	}
	_, err := o.c.w.Write(b)
	return err
}
