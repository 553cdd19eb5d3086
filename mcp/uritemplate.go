package mcp

import (
	"github.com/yosida95/uritemplate/v3"
)

// uriTemplate matches URIs against an RFC 6570 template.
type uriTemplate struct {
	t *uritemplate.Template
}

func parseURITemplate(s string) (*uriTemplate, error) {
	t, err := uritemplate.New(s)
	if err != nil {
		return nil, err
	}
	return &uriTemplate{t: t}, nil
}

// match returns the template variables of uri, or false when it does not
// match.
func (u *uriTemplate) match(uri string) (map[string]string, bool) {
	vals := u.t.Match(uri)
	if vals == nil {
		return nil, false
	}
	out := make(map[string]string, len(u.t.Varnames()))
	for _, n := range u.t.Varnames() {
		out[n] = vals.Get(n).String()
	}
	return out, true
}
