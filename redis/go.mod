module github.com/roundtrip-mcp/roundtrip/redis

go 1.26.0

replace github.com/roundtrip-mcp/roundtrip => ../

require (
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/redis/go-redis/v9 v9.23.0
	github.com/roundtrip-mcp/roundtrip v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
