package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A party form whose tags say what the restricted schema allows.
type partyForm struct {
	Size    int     `json:"size" mcp:"minimum=1,maximum=20"`
	Name    string  `json:"name" jsonschema:"who books" mcp:"minLength=2,maxLength=30,pattern=^[A-Z][a-z]+(,[A-Z][a-z]+)?$"`
	Note    *string `json:"note"`
	Dessert string  `json:"dessert" mcp:"enum=tart|cake,default=tart"`
	Vegan   bool    `json:"vegan" mcp:"default=false,optional"`
	Email   string  `json:"email,omitempty" mcp:"format=email,required"`
}

func TestElicitTagsSayWhatAFormAccepts(t *testing.T) {
	t.Parallel()
	fs, err := formSchemaFor[partyForm]()
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(fs.raw, &schema); err != nil {
		t.Fatal(err)
	}
	p := schema.Properties
	if p["size"]["minimum"] != 1.0 || p["size"]["maximum"] != 20.0 || p["name"]["minLength"] != 2.0 ||
		p["name"]["maxLength"] != 30.0 || p["name"]["pattern"] != "^[A-Z][a-z]+(,[A-Z][a-z]+)?$" ||
		p["name"]["description"] != "who books" || p["dessert"]["default"] != "tart" || p["vegan"]["default"] != false {
		t.Errorf("schema %s", fs.raw)
	}
	if strings.Join(schema.Required, ",") != "size,name,dessert,email" {
		t.Errorf("required %v, want size, name, dessert and email (a pointer and an optional field are not)", schema.Required)
	}
	check := func(content string) error {
		r, err := decodeElicitResult(acceptRaw(content))
		if err != nil {
			t.Fatal(err)
		}
		return fs.check(r)
	}
	ok := `{"size":4,"name":"Ada","dessert":"cake","email":"a@b.example"}`
	if err := check(ok); err != nil {
		t.Errorf("a valid answer: %v", err)
	}
	for _, bad := range []string{
		`{"size":40,"name":"Ada","dessert":"cake","email":"a@b.example"}`, // a party of 40
		`{"size":0,"name":"Ada","dessert":"cake","email":"a@b.example"}`,
		`{"size":4,"name":"A","dessert":"cake","email":"a@b.example"}`,
		`{"size":4,"name":"ada","dessert":"cake","email":"a@b.example"}`,
		`{"size":4,"name":"Ada","dessert":"pie","email":"a@b.example"}`,
		`{"size":4,"name":"Ada","dessert":"cake"}`,
	} {
		if err := check(bad); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, tc := range []struct {
		form func() error
		want string
	}{
		{func() error {
			_, err := buildFormSchema(reflect.TypeFor[struct {
				A int `mcp:"minLength=2"`
			}]())
			return err
		}, "minLength does not apply to a integer field"},
		{func() error {
			_, err := buildFormSchema(reflect.TypeFor[struct {
				A int `mcp:"maximum=ten"`
			}]())
			return err
		}, "not a number"},
		{func() error {
			_, err := buildFormSchema(reflect.TypeFor[struct {
				A int `mcp:"default=x"`
			}]())
			return err
		}, "default"},
		{func() error {
			_, err := buildFormSchema(reflect.TypeFor[struct {
				A int `mcp:"color=red"`
			}]())
			return err
		}, "unknown mcp tag option"},
		{func() error {
			_, err := buildFormSchema(reflect.TypeFor[struct {
				A string `mcp:"pattern=("`
			}]())
			return err
		}, "pattern"},
	} {
		if err := tc.form(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error with %q", err, tc.want)
		}
	}
}

// An answer without an optional pointer field decodes it as nil; one
// with it, as a pointer to the value.
func TestElicitOptionalPointerFieldsDecodeAsNil(t *testing.T) {
	t.Parallel()
	s := askServer(t, nil)
	s.AddTool(&Tool{Name: "book"}, func(ctx context.Context, _ *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[partyForm](ctx, "Your party?")
		if err != nil {
			return nil, err
		}
		v, err := e.Value()
		if err != nil {
			return nil, err
		}
		note := "none"
		if v.Note != nil {
			note = *v.Note
		}
		return TextResult(fmt.Sprintf("%d %s note=%s", v.Size, v.Name, note)), nil
	})
	h := NewHTTPHandler(s, nil)
	for content, want := range map[string]string{
		`{"size":4,"name":"Ada","dessert":"cake","email":"a@b.example"}`:                 "4 Ada note=none",
		`{"size":4,"name":"Ada","dessert":"cake","email":"a@b.example","note":"window"}`: "4 Ada note=window",
	} {
		answer := acceptRaw(content)
		d := &driver{t: t, h: h, method: MethodToolsCall, params: `"name":"book","arguments":{}`}
		if got := text(t, d.run(func(string, map[string]any) any { return answer })); got != want {
			t.Errorf("%s: %q, want %q", content, got, want)
		}
	}
}
