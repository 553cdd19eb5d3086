package auth

import (
	"fmt"
	"net/http"
	"strings"
)

// Limits of the WWW-Authenticate parser: a header beyond them is refused
// as malformed instead of being processed.
const (
	maxChallengeHeaderBytes = 16 << 10
	maxChallenges           = 32
	maxChallengeParams      = 64
)

// Challenge is one challenge of a WWW-Authenticate header (RFC 9110
// section 11.6.1).
type Challenge struct {
	// Scheme is the authentication scheme as sent, such as "Bearer".
	Scheme string
	// Token68 is the token68 form of the credentials, if the challenge
	// uses it instead of parameters.
	Token68 string
	// Params holds the auth-params, names lower-cased, quoted values
	// unescaped.
	Params map[string]string
}

// Param returns the parameter name (case-insensitive), "" if absent.
func (c Challenge) Param(name string) string { return c.Params[strings.ToLower(name)] }

// ParseChallenges parses the values of WWW-Authenticate header fields
// into their challenges, in order. It returns an error wrapping
// ErrMalformedChallenge when a value does not follow the RFC 9110
// grammar or exceeds the parser's limits.
func ParseChallenges(values []string) ([]Challenge, error) {
	var out []Challenge
	total := 0
	for _, v := range values {
		total += len(v)
		if total > maxChallengeHeaderBytes {
			return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformedChallenge, maxChallengeHeaderBytes)
		}
		cs, err := parseChallengeValue(v)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
		if len(out) > maxChallenges {
			return nil, fmt.Errorf("%w: more than %d challenges", ErrMalformedChallenge, maxChallenges)
		}
	}
	return out, nil
}

// BearerChallenge returns the first Bearer challenge of h's
// WWW-Authenticate fields. ok is false when there is none; err is set
// when the fields do not parse.
func BearerChallenge(h http.Header) (c Challenge, ok bool, err error) {
	cs, err := ParseChallenges(h.Values("WWW-Authenticate"))
	if err != nil {
		return Challenge{}, false, err
	}
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "Bearer") {
			return c, true, nil
		}
	}
	return Challenge{}, false, nil
}

func isTchar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

func isToken68Char(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", b) >= 0
}

type challengeLexer struct {
	s string
	i int
}

func (l *challengeLexer) skipOWS() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t') {
		l.i++
	}
}

// skipSeparators skips whitespace and empty list elements.
func (l *challengeLexer) skipSeparators() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t' || l.s[l.i] == ',') {
		l.i++
	}
}

func (l *challengeLexer) token() string {
	start := l.i
	for l.i < len(l.s) && isTchar(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

func (l *challengeLexer) quoted() (string, error) {
	// l.s[l.i] == '"'
	l.i++
	var b strings.Builder
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '"':
			l.i++
			return b.String(), nil
		case c == '\\':
			if l.i+1 >= len(l.s) {
				return "", fmt.Errorf("%w: dangling escape in quoted string", ErrMalformedChallenge)
			}
			b.WriteByte(l.s[l.i+1])
			l.i += 2
		case c < 0x20 && c != '\t' || c == 0x7f:
			return "", fmt.Errorf("%w: control character in quoted string", ErrMalformedChallenge)
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted string", ErrMalformedChallenge)
}

func (l *challengeLexer) atEnd() bool { return l.i >= len(l.s) }

// parseChallengeValue parses one field value: a comma-separated list of
// challenges whose auth-params are themselves comma-separated, so a
// bare token after a comma starts the next challenge.
func parseChallengeValue(v string) ([]Challenge, error) {
	l := &challengeLexer{s: v}
	var out []Challenge
	for {
		l.skipSeparators()
		if l.atEnd() {
			return out, nil
		}
		scheme := l.token()
		if scheme == "" {
			return nil, fmt.Errorf("%w: expected an auth-scheme at offset %d", ErrMalformedChallenge, l.i)
		}
		c := Challenge{Scheme: scheme, Params: map[string]string{}}
		if !l.atEnd() && l.s[l.i] != ' ' && l.s[l.i] != '\t' && l.s[l.i] != ',' {
			return nil, fmt.Errorf("%w: invalid character %q after auth-scheme", ErrMalformedChallenge, l.s[l.i])
		}
		l.skipOWS()
		// token68: the sole credential right after the scheme, up to
		// the end of the value or a comma.
		if !l.atEnd() && l.s[l.i] != ',' {
			j := l.i
			for j < len(l.s) && isToken68Char(l.s[j]) {
				j++
			}
			k := j
			for k < len(l.s) && l.s[k] == '=' {
				k++
			}
			rest := k
			for rest < len(l.s) && (l.s[rest] == ' ' || l.s[rest] == '\t') {
				rest++
			}
			if j > l.i && (rest == len(l.s) || l.s[rest] == ',') {
				c.Token68 = l.s[l.i:k]
				l.i = rest
				out = append(out, c)
				if len(out) > maxChallenges {
					return nil, fmt.Errorf("%w: more than %d challenges", ErrMalformedChallenge, maxChallenges)
				}
				continue
			}
		}
		for {
			sep := l.i
			l.skipSeparators()
			sawComma := strings.IndexByte(l.s[sep:l.i], ',') >= 0
			if l.atEnd() {
				break
			}
			mark := l.i
			name := l.token()
			if name == "" {
				return nil, fmt.Errorf("%w: expected an auth-param at offset %d", ErrMalformedChallenge, l.i)
			}
			l.skipOWS()
			if l.atEnd() || l.s[l.i] != '=' {
				// A token not followed by "=" after a comma starts the
				// next challenge.
				if !sawComma {
					return nil, fmt.Errorf("%w: unexpected token %q", ErrMalformedChallenge, name)
				}
				l.i = mark
				break
			}
			l.i++ // '='
			l.skipOWS()
			var val string
			switch {
			case l.atEnd():
				return nil, fmt.Errorf("%w: auth-param %q has no value", ErrMalformedChallenge, name)
			case l.s[l.i] == '"':
				q, err := l.quoted()
				if err != nil {
					return nil, err
				}
				val = q
			default:
				val = l.token()
				if val == "" {
					return nil, fmt.Errorf("%w: auth-param %q has an invalid value", ErrMalformedChallenge, name)
				}
			}
			key := strings.ToLower(name)
			if _, dup := c.Params[key]; dup {
				return nil, fmt.Errorf("%w: auth-param %q repeated", ErrMalformedChallenge, name)
			}
			if len(c.Params) >= maxChallengeParams {
				return nil, fmt.Errorf("%w: more than %d auth-params", ErrMalformedChallenge, maxChallengeParams)
			}
			c.Params[key] = val
			l.skipOWS()
			if !l.atEnd() && l.s[l.i] != ',' {
				return nil, fmt.Errorf("%w: unexpected %q after auth-param %q", ErrMalformedChallenge, l.s[l.i], name)
			}
		}
		out = append(out, c)
		if len(out) > maxChallenges {
			return nil, fmt.Errorf("%w: more than %d challenges", ErrMalformedChallenge, maxChallenges)
		}
	}
}
