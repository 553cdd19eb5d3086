package gateway

import (
	"encoding/binary"
	"errors"
)

// The gateway's own requestState plaintext, which the aggregate server's
// request-state boundary seals (bound to the method, the aggregated name,
// the arguments, the downstream principal and the audience) before it
// leaves and opens before the handler sees it again:
//
//	'G' 1 kind upstream-name
//	kind 'h' (a call held open on a 2025 upstream): id[16] round(uvarint)
//	kind 'p' (a 2026-07-28 upstream's round): call(len-prefixed JSON of
//	  mcp.PendingCall, which holds the upstream's own state)
//	  preset(len-prefixed JSON object: answers the gateway gave itself)
//
// Lengths are uvarints. decodeState accepts exactly what encodeState
// writes.

const (
	stateMagic   = 'G'
	stateVersion = 1
	kindHeld     = 'h'
	kindPending  = 'p'
	idLen        = 16
	// maxStateBytes bounds a state the decoder looks at (the boundary
	// bounds the token before; this is defence in depth).
	maxStateBytes = 1 << 20
)

type gwState struct {
	kind     byte
	upstream string
	id       [idLen]byte // held
	round    uint64      // held
	call     []byte      // pending: mcp.PendingCall JSON
	preset   []byte      // pending: InputResponses JSON ("" when none)
}

var errBadState = errors.New("gateway: malformed state")

func encodeState(s *gwState) string {
	b := make([]byte, 0, 32+len(s.upstream)+len(s.call)+len(s.preset))
	b = append(b, stateMagic, stateVersion, s.kind)
	b = appendBytes(b, []byte(s.upstream))
	switch s.kind {
	case kindHeld:
		b = append(b, s.id[:]...)
		b = binary.AppendUvarint(b, s.round)
	case kindPending:
		b = appendBytes(b, s.call)
		b = appendBytes(b, s.preset)
	}
	return string(b)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func decodeState(str string) (*gwState, error) {
	b := []byte(str)
	if len(b) > maxStateBytes || len(b) < 3 || b[0] != stateMagic || b[1] != stateVersion {
		return nil, errBadState
	}
	s := &gwState{kind: b[2]}
	b = b[3:]
	up, b, ok := readBytes(b)
	if !ok || len(up) == 0 || len(up) > maxUpstreamName || !safeName(string(up)) {
		return nil, errBadState
	}
	s.upstream = string(up)
	switch s.kind {
	case kindHeld:
		if len(b) < idLen {
			return nil, errBadState
		}
		copy(s.id[:], b)
		b = b[idLen:]
		r, n := binary.Uvarint(b)
		if n <= 0 || r == 0 || n != uvarintLen(r) {
			return nil, errBadState
		}
		s.round, b = r, b[n:]
	case kindPending:
		if s.call, b, ok = readBytes(b); !ok || len(s.call) == 0 {
			return nil, errBadState
		}
		if s.preset, b, ok = readBytes(b); !ok {
			return nil, errBadState
		}
	default:
		return nil, errBadState
	}
	if len(b) != 0 {
		return nil, errBadState
	}
	return s, nil
}

// readBytes reads a uvarint length and that many bytes; a length that
// is not minimally encoded is refused, so that one state has one form.
func readBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) || k != uvarintLen(n) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

func uvarintLen(n uint64) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutUvarint(tmp[:], n)
}
