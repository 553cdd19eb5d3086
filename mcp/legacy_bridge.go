package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
		answers, err := a.answerAll(ctx, irr.InputRequests)
		if err != nil {
			return nil, err
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
func (a *legacyAsker) answerAll(ctx context.Context, reqs map[string]InputRequest) (InputResponses, error) {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(InputResponses, len(keys))
	for _, k := range keys {
		q, err := newQuestion(reqs[k], []AskOption{WithKey(k)}, isJSONObject)
		if err != nil {
			return nil, err
		}
		raw, err := a.ask(ctx, q)
		if err != nil {
			return nil, err
		}
		out[k] = raw
	}
	return out, nil
}

func isJSONObject(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return errors.New("the answer is not a JSON object")
	}
	return nil
}
