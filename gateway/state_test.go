package gateway

import (
	"bytes"
	"testing"
)

func TestTheGatewayStateRoundTrips(t *testing.T) {
	t.Parallel()
	for _, s := range []*gwState{
		{kind: kindHeld, upstream: "legacy", id: [idLen]byte{1, 2, 3}, round: 300},
		{kind: kindPending, upstream: "m", call: []byte(`{"method":"tools/call"}`)},
		{kind: kindPending, upstream: "m", call: []byte(`{}`), preset: []byte(`{"k":{"action":"decline"}}`)},
	} {
		got, err := decodeState(encodeState(s))
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if got.kind != s.kind || got.upstream != s.upstream || got.id != s.id || got.round != s.round ||
			!bytes.Equal(got.call, s.call) || !bytes.Equal(got.preset, s.preset) {
			t.Errorf("%+v came back as %+v", s, got)
		}
	}
}

// FuzzDecodeState: the decoder never panics, and what it accepts it
// accepts in exactly the form the encoder writes.
func FuzzDecodeState(f *testing.F) {
	f.Add(encodeState(&gwState{kind: kindHeld, upstream: "legacy", id: [idLen]byte{9}, round: 1}))
	f.Add(encodeState(&gwState{kind: kindPending, upstream: "m", call: []byte(`{"method":"tools/call","name":"x"}`), preset: []byte(`{}`)}))
	f.Add("G\x01h\x00")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := decodeState(s)
		if err != nil {
			return
		}
		if again := encodeState(st); again != s {
			t.Fatalf("%q decoded, and encodes back as %q", s, again)
		}
	})
}
