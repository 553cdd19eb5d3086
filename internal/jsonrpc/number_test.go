package jsonrpc

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"
)

// ParseNumber reads the JSON grammar and nothing more: what strconv
// alone would take ("Inf", hexadecimal, underscores, a plus sign,
// leading zeros, a bare dot) is refused as a syntax error.
func TestNumbersAreReadByTheJSONGrammarOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want float64
	}{{"0", 0}, {"-0", 0}, {"12", 12}, {"-1.5", -1.5}, {"1e3", 1000}, {"2E-2", 0.02}, {"1.25e+2", 125}} {
		if got, err := ParseNumber(c.in); err != nil || got != c.want {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if got, err := ParseNumber([]byte(c.in)); err != nil || got != c.want {
			t.Errorf("ParseNumber([]byte(%q)) = %v, %v", c.in, got, err)
		}
	}
	for _, in := range []string{"", "-", "Inf", "NaN", "0x10", "1_000", "+1", "01", ".5", "1.", "1e", "1e+", " 1", "1 ", "--1", "1.5.5"} {
		if _, err := ParseNumber(in); !errors.Is(err, strconv.ErrSyntax) {
			t.Errorf("ParseNumber(%q): %v, want a syntax error", in, err)
		}
	}
	if f, err := ParseNumber("1e999"); !errors.Is(err, strconv.ErrRange) || !math.IsInf(f, 1) {
		t.Errorf("ParseNumber(1e999) = %v, %v; want +Inf and a range error", f, err)
	}
	for _, c := range []struct {
		in string
		ok bool
	}{{"0", true}, {"42", true}, {"2147483647", true}, {"2147483648", false}, {"-1", false}, {"01", false}, {"1.0", false}, {"1e2", false}, {"", false}, {"+3", false}} {
		if _, err := ParseUint(c.in, 31); (err == nil) != c.ok {
			t.Errorf("ParseUint(%q, 31): %v", c.in, err)
		}
	}
	for _, c := range []struct {
		in string
		ok bool
	}{{"0", true}, {"-0", true}, {"-42", true}, {"9223372036854775807", true}, {"9223372036854775808", false}, {"-", false}, {"01", false}, {"-01", false}, {"+1", false}, {"1.0", false}, {"1e2", false}, {`"1"`, false}} {
		if _, err := ParseInt(c.in, 64); (err == nil) != c.ok {
			t.Errorf("ParseInt(%q, 64): %v", c.in, err)
		}
	}
	if n, ok := IntID(-7).Int(); !ok || n != -7 {
		t.Errorf("IntID(-7).Int() = %d, %v", n, ok)
	}
	if _, ok := StringID("7").Int(); ok {
		t.Error("a string id has an integer")
	}
	if _, ok := (ID{}).Int(); ok {
		t.Error("the zero id has an integer")
	}
	if end, ok := NumberEnd([]byte(`[-1.5e3,2]`), 1); !ok || end != 7 {
		t.Errorf("NumberEnd = %d, %v; want 7, true", end, ok)
	}
	if _, ok := NumberEnd([]byte(`[`), 1); ok {
		t.Error("NumberEnd past the end reported a number")
	}
}

// FuzzParseNumberAgreesWithEncodingJSON holds ParseNumber to
// encoding/json: a text is a number for one exactly when it is for the
// other, with the same value.
func FuzzParseNumberAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{"0", "-0.0e-0", "1e308", "1e309", "123456789012345678901234567890", "0x1", "Inf", "01", "1.", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseNumber(s)
		var n json.Number
		d := json.Unmarshal([]byte(s), &n)
		isNum := d == nil && string(n) == s
		if isNum != (err == nil || errors.Is(err, strconv.ErrRange)) {
			t.Fatalf("%q: ParseNumber %v, encoding/json number %v", s, err, isNum)
		}
		if err == nil {
			var want float64
			if json.Unmarshal([]byte(s), &want) != nil || want != got {
				t.Fatalf("%q: ParseNumber %v, encoding/json %v", s, got, want)
			}
		}
	})
}
