package mcp

import (
	"strconv"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/gopool"
)

// How many of a server's requests (elicitation/create,
// sampling/createMessage, roots/list, ping on a session of an earlier
// revision) one transport answers at once, and how many refusals it
// sends at once past that. Each answer is a goroutine running the
// Client's handler and sending the response (over HTTP a POST, and so a
// connection, while the server holds it); a server that sends thousands
// of requests and never takes the answers holds at most
// maxConcurrentAnswers + maxConcurrentRefusals of each. A request that
// finds every slot taken is answered with busyCode at once when a
// refusal slot is free, and dropped (logged) when none is.
const (
	maxConcurrentAnswers  = 16
	maxConcurrentRefusals = 4
)

// busyCode is the code of the error that refuses a server's request
// past maxConcurrentAnswers: the server may send it again later.
const busyCode = codeTemporarilyUnavailable

// busyMessage is that error's message.
var busyMessage = "Too many requests in flight: the client answers at most " + strconv.Itoa(maxConcurrentAnswers) + " of the server's requests at once; retry later"

// answerSlots bound the goroutines answering one transport's server
// requests. The zero value is not usable: see newAnswerSlots.
type answerSlots struct {
	work   chan struct{}
	refuse chan struct{}
	// goroutines runs the answers on goroutines an earlier answer's
	// handler and POST already grew the stack of (a few, kept for
	// answerKeep after their answer).
	goroutines *gopool.Pool
}

// answerKeep is how long a goroutine that answered waits for the next
// answer before it ends.
const answerKeep = 100 * time.Millisecond

// newAnswerSlots makes the slots of a transport; done ends with it.
func newAnswerSlots(done <-chan struct{}) answerSlots {
	return answerSlots{work: make(chan struct{}, maxConcurrentAnswers), refuse: make(chan struct{}, maxConcurrentRefusals),
		goroutines: gopool.New(2, answerKeep, done)}
}

// run runs answer on a goroutine of its own when an answer slot is
// free, else refuse (which sends the busy error) when a refusal slot
// is; it reports false when it ran neither. It never blocks: it is
// called by the goroutine that reads the server's messages.
func (s answerSlots) run(answer, refuse func()) bool {
	select {
	case s.work <- struct{}{}:
		s.goroutines.Go(func() {
			defer func() { <-s.work }()
			answer()
		})
		return true
	default:
	}
	select {
	case s.refuse <- struct{}{}:
		go func() {
			defer func() { <-s.refuse }()
			refuse()
		}()
		return true
	default:
		return false
	}
}

// busyResponse is the error message refusing the server's request id.
func busyResponse(id jsonrpc.ID) []byte {
	return jsonrpc.AppendError(nil, id, NewError(busyCode, busyMessage, nil))
}
