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

// streamInitialize is the binding of initialize on a stream connection:
// it opens the connection's session.
type streamInitialize struct{}

func (streamInitialize) serveStream(ctx context.Context, c *streamConn, msg jsonrpc.Message) func() {
	c.initialize(ctx, msg)
	return nil
}

// streamSession serves a request of the connection's session in its
// legacy era.
type streamSession struct{ ls *legacySession }

func (b streamSession) serveStream(ctx context.Context, c *streamConn, msg jsonrpc.Message) func() {
	return c.request(ctx, &call{msg: msg, era: b.ls.scope()})
}

// initialize opens the connection's session.
func (c *streamConn) initialize(ctx context.Context, msg jsonrpc.Message) {
	if c.legacy.Load() != nil {
		c.writeMsg(jsonrpc.AppendError(nil, msg.ID, jsonrpcError(CodeInvalidRequest, "Invalid request: this connection is already initialized")))
		return
	}
	p, f := decodeInitialize(msg.Params)
	if f != nil {
		c.writeMsg(appendFailure(nil, msg.ID, f))
		return
	}
	ls := c.s.newLegacySession("", p, sessionOrigin{ctx: ctx, transport: TransportStream, id: msg.ID})
	ls.unrelated = func(method string, params any) { _ = c.writeNotification(method, params) }
	c.legacy.Store(ls)
	c.writeMsg(c.s.initializeResult(msg.ID, ls))
}

// legacyNotification handles a client notification of the session.
func (c *streamConn) legacyNotification(msg jsonrpc.Message) {
	ls := c.legacy.Load()
	if ls == nil || msg.Method != notificationInitialized || ls.isInitialized() {
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
			case <-ls.listener.ready:
				ls.listener.sendPending(func(b []byte) { _ = c.writeMsg(b) })
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
	// The answer comes on the input: if this request is being served on
	// the reading goroutine, another must read now.
	o.c.handOff(0)
	b := append(msg, '\n')
	o.c.wmu.Lock()
	defer o.c.wmu.Unlock()
	if !late && o.ctx.Err() != nil {
		return errRequestDone
	}
	_, err := o.c.w.Write(b)
	return err
}
