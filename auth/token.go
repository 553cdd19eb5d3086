package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxExpiresIn caps expires_in (ten years) so that absurd values cannot
// overflow the expiry computation.
const maxExpiresIn = 10 * 365 * 24 * 3600

// expiresIn is the expires_in member: a number of seconds, also accepted
// as a numeric string (some servers send one).
type expiresIn int64

func (e *expiresIn) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*e = 0
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("expires_in %s is not a number", b)
	}
	switch {
	case f != f || f <= 0:
		*e = 0
	case f > maxExpiresIn:
		*e = maxExpiresIn
	default:
		*e = expiresIn(f)
	}
	return nil
}

// parseTokenResponse decodes a successful token response (RFC 6749
// section 5.1). Only Bearer tokens are accepted.
func parseTokenResponse(b []byte, now time.Time) (*Token, error) {
	return parseTokenResponseOf(b, now, false)
}

// parseTokenResponseOf decodes a successful token response (RFC 6749
// section 5.1): a Bearer token, or also a DPoP one with dpop.
func parseTokenResponseOf(b []byte, now time.Time, dpop bool) (*Token, error) {
	var r struct {
		AccessToken  string    `json:"access_token"`
		TokenType    string    `json:"token_type"`
		RefreshToken string    `json:"refresh_token"`
		ExpiresIn    expiresIn `json:"expires_in"`
		Scope        string    `json:"scope"`
	}
	if err := decodeObject(b, &r); err != nil {
		return nil, err
	}
	if r.AccessToken == "" {
		return nil, errors.New("no access_token")
	}
	tt := TokenTypeBearer
	switch {
	case strings.EqualFold(r.TokenType, TokenTypeBearer):
	case dpop && strings.EqualFold(r.TokenType, TokenTypeDPoP):
		tt = TokenTypeDPoP
	case dpop:
		return nil, fmt.Errorf("token_type %q is not Bearer or DPoP", r.TokenType)
	default:
		return nil, fmt.Errorf("token_type %q is not Bearer", r.TokenType)
	}
	for _, c := range r.AccessToken {
		// RFC 6750 b64token, loosely: printable ASCII without spaces,
		// so it cannot break the Authorization header.
		if c <= 0x20 || c >= 0x7f {
			return nil, errors.New("access_token has characters not allowed in a header")
		}
	}
	t := &Token{AccessToken: r.AccessToken, TokenType: tt, RefreshToken: r.RefreshToken, Scope: r.Scope}
	if r.ExpiresIn > 0 {
		t.Expiry = now.Add(time.Duration(r.ExpiresIn) * time.Second)
	}
	return t, nil
}
