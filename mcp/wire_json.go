package mcp

import (
	"bytes"
	"encoding/json"
	"sync"
)

// JSON helpers of both sides (shared layer): the pooled encoder results
// and requests are written with, and the sentinel that ends a scan early.

// encoder is a pooled JSON encoder writing into its own buffer.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// marshalAppend encodes v with the pooled encoder and appends it to dst.
func marshalAppend(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	if err == nil {
		b := e.buf.Bytes()
		dst = append(dst, b[:len(b)-1]...) // drop Encode's newline
	}
	if e.buf.Cap() <= 64<<10 {
		encoders.Put(e)
	}
	return dst, err
}

// stopScan is the type of errStopScan.
type stopScan struct{}

func (stopScan) Error() string { return "stop" }

// errStopScan, returned from a jsonrpc.Fields callback, ends the scan
// early without an error of its own.
var errStopScan error = stopScan{}
