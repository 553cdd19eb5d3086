package mcp

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Naming a question for a person. Errors and log lines about a question
// name it by what its user saw (an elicitation's message, the last text
// of a sampling request) rather than by its inputRequests key, which for
// a derived key is a hash ("elicit_65eQXUnK"). The key stays in the
// error's fields and in JSON-RPC error data, where code may match it.

// maxQuestionRunes bounds the text of a question quoted in a message.
const maxQuestionRunes = 80

// questionText is the text of r a person saw, "" when it has none (a
// roots request, an elicitation without a message).
func questionText(r InputRequest) string {
	switch v := r.(type) {
	case *ElicitRequest:
		return v.Message
	case *CreateMessageRequest:
		if len(v.Messages) == 0 {
			return ""
		}
		var parts []string
		for _, c := range v.Messages[len(v.Messages)-1].Content {
			if tc, ok := c.(*TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// shortText folds runs of white space (newlines included) into one space
// and cuts s to max runes, ending a cut text with "…".
func shortText(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}

// questionLabel names a question in a sentence: its kind, then its text
// quoted and cut to maxQuestionRunes, or its key when it has no text:
// `question "Which region?"`, `sampling request "Summarize the log"`,
// `roots request "roots_x1Y2"`.
func questionLabel(method, text, key string) string {
	kind := "question"
	switch method {
	case MethodCreateMessage:
		kind = "sampling request"
	case MethodListRoots:
		kind = "roots request"
	}
	return kind + " " + quotedQuestion(text, key)
}

// quotedQuestion is a question's text, quoted and cut to
// maxQuestionRunes, or its key quoted when it has no text.
func quotedQuestion(text, key string) string {
	if t := shortText(text, maxQuestionRunes); t != "" {
		return strconv.Quote(t)
	}
	return strconv.Quote(key)
}

// labelOf is questionLabel for an input request.
func labelOf(r InputRequest, key string) string {
	if r == nil {
		return questionLabel("", "", key)
	}
	return questionLabel(r.InputMethod(), questionText(r), key)
}

// answerFault says why an answer fails its question's checks: the form
// field at fault ("" for the answer as a whole), the schema keyword it
// breaks (see InvalidAnswerError.Rule) and a sentence for a person.
type answerFault struct {
	field, rule, detail string
}

func (f *answerFault) Error() string { return f.detail }

func fault(field, rule, detail string) *answerFault {
	return &answerFault{field: field, rule: rule, detail: detail}
}

// Bounds on what an answer's error repeats of the answer: a member name
// may be the client's own (one the form does not declare), and the
// message goes back on the wire.
const (
	maxNameRunes   = 40  // a field's name in a sentence
	maxFieldRunes  = 200 // InvalidAnswerError.Field
	maxDetailRunes = 300 // InvalidAnswerError.Detail
)

// cutRunes cuts s to max runes (ending a cut text with "…"), replacing
// invalid UTF-8; white space is kept as it is.
func cutRunes(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// fieldName writes a field's name as a sentence's subject: bare when it
// is a plain identifier, quoted otherwise (and when cut to
// maxNameRunes).
func fieldName(name string) string {
	if name == "" || utf8.RuneCountInString(name) > maxNameRunes {
		return strconv.Quote(cutRunes(name, maxNameRunes))
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return strconv.Quote(name)
		}
	}
	return name
}

// maxShownValues bounds the allowed values an enum message lists.
const maxShownValues = 10

// quotedList writes values as `"a", "b"`, at most maxShownValues of them.
func quotedList(values []string) string {
	var b strings.Builder
	for i, v := range values {
		if i == maxShownValues {
			b.WriteString(", … (" + strconv.Itoa(len(values)-i) + " more)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(shortText(v, 40)))
	}
	return b.String()
}

// shownValue writes an answer's value (as decodeElicit produces it) for
// a "(got ...)" clause.
func shownValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(shortText(x, 40))
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []string:
		return "[" + quotedList(x) + "]"
	}
	return "a value of another type"
}

// kindOfValue names the JSON type of an answer's value, for a type
// fault.
func kindOfValue(v any) string {
	switch x := v.(type) {
	case string:
		return "the string " + strconv.Quote(shortText(x, 40))
	case bool:
		return strconv.FormatBool(x)
	case int64, float64:
		return "the number " + shownValue(x)
	case []string:
		return "a list"
	}
	return "a value of another type"
}

// plural writes n and the noun, with an s when n is not 1.
func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

// jsonKindName names the JSON type of a raw value, for a type fault.
func jsonKindName(v []byte) string {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindNull:
		return "null"
	case jsonrpc.KindObject:
		return "an object"
	case jsonrpc.KindArray:
		return "a list"
	}
	return "a value of another type"
}
