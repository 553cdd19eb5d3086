// Package requeststate seals the requestState of MCP multi round-trip
// requests. The state comes back from the client, so it is
// attacker-controlled input: a Sealer binds the handler's plaintext
// state to the request that produced it (method, target, a digest of the
// arguments), to an audience and to the authenticated principal, gives
// it a short lifetime, and seals it with a Codec. Opening verifies all
// of that and rejects anything else with an error matching ErrInvalid,
// whose reason is meant for logs only.
//
// The mcp package uses this package on every server by default; it is
// usable on its own by servers built on other stacks.
//
// # Codecs
//
// KeyRing is the built-in codec: AES-256-GCM with per-key subkeys from
// HKDF-SHA256 and the versioned token format documented on its
// constants. Bring your own codec (a KMS data key, an existing token
// service) by implementing Codec's two methods; expiry and bindings stay
// outside it.
//
// # Key rotation
//
// The first key of a KeyRing seals; all of them verify. Rotate without
// losing rounds in flight in three phases, deploying each to every
// instance before starting the next:
//
//  1. keys = [OLD, NEW]: every instance learns to verify NEW; OLD still seals.
//  2. keys = [NEW, OLD]: NEW seals; states sealed with OLD keep verifying.
//  3. keys = [NEW], one TTL after phase 2 is fully deployed: OLD retires.
//
// Never promote the sealing key first: a state sealed with a key that
// some instance cannot verify yet is rejected there mid-flow.
//
// # Single use
//
// A sealed state may be replayed until it expires. Where a flow must be
// consumed at most once, a Guard records each accepted state with a
// digest of the answers that came with it and the outcome of that leg:
// the identical leg sent again (an answer lost on the way back) gets the
// recorded outcome, any other use is refused, and a state issued before
// the guard's store lost its records is refused too. MemoryGuard serves
// one process, package redisguard a fleet. The mcp package records the
// calls of tools that take an idempotency key through the same Guard.
package requeststate
