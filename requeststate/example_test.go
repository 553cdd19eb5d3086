package requeststate_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The package on its own: seal a state bound to its request, open it for
// the same request, and see it refused for another.
func Example() {
	ring, err := requeststate.NewKeyRing(requeststate.GenerateKey())
	if err != nil {
		panic(err)
	}
	s := &requeststate.Sealer{Codec: ring, TTL: 5 * time.Minute, Audience: "billing"}
	b := requeststate.Binding{Method: "tools/call", Target: "refund", Arguments: []byte(`{"order": 42}`), Principal: "alice"}

	token, err := s.Seal(b, "step=2")
	if err != nil {
		panic(err)
	}
	c, err := s.Open(token, b)
	fmt.Println(c.State, err)

	// Same token, other arguments (key order and spacing do not matter,
	// values do), other user: refused.
	same := b
	same.Arguments = []byte(`{ "order":42 }`)
	_, err = s.Open(token, same)
	fmt.Println("reformatted arguments:", err == nil)
	other := b
	other.Arguments = []byte(`{"order": 43}`)
	_, err = s.Open(token, other)
	fmt.Println("other arguments:", errors.Is(err, requeststate.ErrInvalid))
	mallory := b
	mallory.Principal = "mallory"
	_, err = s.Open(token, mallory)
	fmt.Println("other user:", errors.Is(err, requeststate.ErrInvalid))
	// Output:
	// step=2 <nil>
	// reformatted arguments: true
	// other arguments: true
	// other user: true
}
