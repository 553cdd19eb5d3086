package jsonrpc

// Is reports whether target is an *Error with the same code and message,
// so that errors.Is matches an error decoded from the wire against the
// sentinel the server sent it from (data is not compared: it may carry
// per-response details such as a retry delay).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t != nil && e.Code == t.Code && e.Message == t.Message
}
