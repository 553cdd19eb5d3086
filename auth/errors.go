package auth

import (
	"errors"
	"fmt"
)

// Errors a caller may match with errors.Is. The errors the Transport
// returns wrap one of them with the details.
var (
	// ErrNoAuthorizer: the server needs authorization and Options.Authorize
	// is nil.
	ErrNoAuthorizer = errors.New("auth: authorization needed but no Authorize function is configured")
	// ErrMetadataNotFound: no protected resource or authorization server
	// metadata document could be found. A server whose protected resource
	// metadata URLs all answer 4xx (and whose challenge names no
	// resource_metadata) is not this error but the 2025-03-26 discovery
	// at its origin; this error then means that its authorization server
	// metadata URL failed otherwise (5xx, network error).
	ErrMetadataNotFound = errors.New("auth: metadata not found")
	// ErrInvalidMetadata: a metadata document is malformed or lacks a
	// required field.
	ErrInvalidMetadata = errors.New("auth: invalid metadata")
	// ErrResourceMismatch: the protected resource metadata names a
	// resource that does not cover the server URL.
	ErrResourceMismatch = errors.New("auth: protected resource metadata does not match the server URL")
	// ErrIssuerMismatch: an issuer (in the authorization server metadata
	// or the authorization response's iss) differs from the expected one.
	ErrIssuerMismatch = errors.New("auth: issuer mismatch")
	// ErrIssuerMissing: the authorization server advertised
	// authorization_response_iss_parameter_supported but the
	// authorization response has no iss.
	ErrIssuerMissing = errors.New("auth: iss missing from the authorization response")
	// ErrStateMismatch: the authorization response's state is not the one
	// sent.
	ErrStateMismatch = errors.New("auth: state mismatch in the authorization response")
	// ErrPKCEUnsupported: the authorization server does not list S256 in
	// code_challenge_methods_supported.
	ErrPKCEUnsupported = errors.New("auth: authorization server does not support PKCE S256")
	// ErrNoClient: there is no way to obtain a client identity at this
	// authorization server (no pre-registered credentials, no client ID
	// metadata document support, no registration endpoint).
	ErrNoClient = errors.New("auth: no client registration available")
	// ErrAuthorizationDenied: the authorization response carries an error.
	ErrAuthorizationDenied = errors.New("auth: authorization denied")
	// ErrTokenRequest: the token or registration endpoint refused the
	// request; the error is an *OAuthError.
	ErrTokenRequest = errors.New("auth: token request failed")
	// ErrGrantUnsupported: the authorization server's metadata lists
	// grant_types_supported without the grant of Options.Grant.
	ErrGrantUnsupported = errors.New("auth: authorization server does not support the grant")
	// ErrAuthMethodUnsupported: the authorization server's metadata does
	// not list the client authentication method (or, for
	// private_key_jwt, the signing algorithm) the client is configured
	// with.
	ErrAuthMethodUnsupported = errors.New("auth: authorization server does not support the client authentication method")
	// ErrDPoPUnsupported: the authorization server's metadata lists
	// dpop_signing_alg_values_supported without the algorithm of the
	// Transport's DPoP key.
	ErrDPoPUnsupported = errors.New("auth: authorization server does not support the DPoP proof algorithm")
	// ErrRedirect: an authorization server, protected resource or key
	// set endpoint answered a metadata, registration, token or key set
	// request with a redirect (3xx). Such requests carry credentials or
	// decide where they go, so redirects are never followed (RFC 9700
	// section 4.12), not even with a caller-supplied HTTPClient.
	ErrRedirect = errors.New("auth: redirect not followed")
	// ErrResponseTooLarge: a response body exceeds Options.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("auth: response too large")
	// ErrMalformedChallenge: a WWW-Authenticate header does not parse.
	ErrMalformedChallenge = errors.New("auth: malformed WWW-Authenticate header")
)

// OAuthError is an error response (RFC 6749 section 5.2) from a token or
// registration endpoint. It matches ErrTokenRequest with errors.Is.
type OAuthError struct {
	// StatusCode is the HTTP status of the response.
	StatusCode int
	// Code is the "error" member, such as invalid_grant.
	Code string
	// Description is the "error_description" member.
	Description string
	// Endpoint is the URL the request went to.
	Endpoint string
}

func (e *OAuthError) Error() string {
	msg := fmt.Sprintf("auth: %s: HTTP %d", e.Endpoint, e.StatusCode)
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// Is reports whether target is ErrTokenRequest.
func (e *OAuthError) Is(target error) bool { return target == ErrTokenRequest }
