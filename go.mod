module github.com/roundtrip-mcp/roundtrip

go 1.26.0

require (
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/google/jsonschema-go v0.4.3
	github.com/segmentio/asm v1.2.1
	github.com/yosida95/uritemplate/v3 v3.0.2
)

require golang.org/x/sys v0.48.0 // indirect
