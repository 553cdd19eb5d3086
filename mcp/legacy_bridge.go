package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The input bridge of the session eras: a low-level handler that builds
// its own InputRequiredResult (the 2026-07-28 vocabulary) serves a client
// of an earlier revision too. Its input requests go to the client as live
// requests, one after the other, and the handler runs again with the
// answers as InputResponses and its plaintext state as RequestState,
// exactly as a modern client would retry, until it completes or the round
// bound is reached. ServerOptions.RefuseLegacyInputRequired turns it off.

const defaultLegacyInputRounds = 10

func (scope *legacyScope) resolveInput(ctx context.Context, sc *requestScope, irr *InputRequiredResult, rp *retryParams, run func() (Result, error)) (Result, error) {
	srv := sc.s
	if srv.opts.RefuseLegacyInputRequired || rp == nil {
		return irr, nil // execute answers -32603 (legacy_era.go)
	}
	a, ok := sc.asker.(*legacyAsker)
	if !ok {
		return irr, nil
	}
	limit := srv.opts.LegacyInputRounds
	if limit <= 0 {
		limit = defaultLegacyInputRounds
	}
	for round := 1; ; round++ {
		if round > limit {
			return nil, jsonrpcError(CodeInternalError, fmt.Sprintf("Internal error: the %s handler still needed input after %d rounds", sc.method, limit))
		}
		answers, err := a.answerAll(ctx, srv, irr.InputRequests)
		if err != nil {
			return srv.askFailed(ctx, sc.method, err)
		}
		rp.InputResponses, rp.RequestState, rp.state = answers, irr.RequestState, stateString
		if irr.RequestState == "" {
			rp.state = stateAbsent
		}
		res, err := run()
		next, more := res.(*InputRequiredResult)
		if err != nil || !more || next == nil {
			return res, err
		}
		irr = next
	}
}

// answerAll sends the input requests of one round as live requests, in
// key order, and returns the answers by key. The answers are not
// validated here: the handler reads them as a 2026-07-28 handler reads
// its inputResponses (see InputResponses).
func (a *legacyAsker) answerAll(ctx context.Context, srv *Server, reqs map[string]InputRequest) (InputResponses, error) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(InputResponses, len(keys))
	for _, k := range keys {
		q, err := newQuestion(reqs[k], []AskOption{WithKey(k)}, isJSONObject)
		if err != nil {
			// A server bug, answered as settle answers an invalid
			// InputRequiredResult.
			srv.log.Error("mcp: invalid InputRequiredResult (server bug)", "method", a.method, "err", err)
			return nil, jsonrpc.NewError(CodeInternalError, "Internal error: "+err.Error())
		}
		raw, err := a.ask(ctx, q)
		if err != nil {
			return nil, err
		}
		out[k] = raw
	}
	return out, nil
}

// askFailed answers a call whose handler's own input request could not
// be answered (the client refused it with a JSON-RPC error, the
// session's revision cannot carry it, the session ended) as the call
// would be answered had the handler asked with the asking API and
// returned its error: an isError result naming the question on
// tools/call, the asking API's JSON-RPC error elsewhere.
func (srv *Server) askFailed(ctx context.Context, method string, err error) (Result, error) {
	if method == MethodToolsCall {
		return srv.toolResult(ctx, "", nil, err)
	}
	return nil, askOutcomeError(err)
}

func isJSONObject(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return errors.New("the answer is not a JSON object")
	}
	return nil
}
