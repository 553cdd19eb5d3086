package mcp

import (
	"bytes"
	"encoding/json"
	"sync"
)

// JSON helpers both sides encode and scan with: the pooled encoder and
// the sentinel that ends a scan early.

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

// marshal encodes v with the pooled encoder and appends it to dst.
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

type stopScan struct{}

func (stopScan) Error() string { return "stop" }

var errStopScan error = stopScan{}
