package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redisguard"
	"github.com/roundtrip-mcp/roundtrip/redis/redissessions"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The SDK seals every requestState the MRTR handlers produce (AES-256-GCM,
// bound to method, target, arguments and audience, with a TTL) and
// verifies it on the way back, so a tampered or foreign state never
// reaches a handler.

// stateFlags are the command-line settings of request state.
type stateFlags struct {
	keys      string        // -state-keys: comma-separated base64url keys
	keyFile   string        // -state-key-file: a file of keys, re-read on SIGHUP and on change
	ttl       time.Duration // -state-ttl
	guard     string        // -guard: "", "memory", or a Redis URL (redis://, rediss://, unix://)
	sentinels string        // -guard-sentinels: comma-separated sentinel addresses (then -guard names the master)
	replicas  int           // -guard-replicas
	lease     time.Duration // -guard-lease
	sessions  string        // -session-store: "" or a Redis URL (with -guard-sentinels, the master name)
}

// stateOptions builds the sealing configuration: keys from -state-key-file,
// else -state-keys (or ROUNDTRIP_STATE_KEYS), else a random per-process
// key; -state-ttl; and the single-use guard. The returned key file, when
// not nil, is to be reloaded on SIGHUP.
func stateOptions(f stateFlags, logger *slog.Logger) (mcp.RequestStateOptions, *requeststate.KeyFile, error) {
	var o mcp.RequestStateOptions
	var kf *requeststate.KeyFile
	switch {
	case f.keyFile != "" && f.keys != "":
		return o, nil, errors.New("set -state-keys or -state-key-file, not both")
	case f.keyFile != "":
		var err error
		if kf, err = requeststate.OpenKeyFile(f.keyFile); err != nil {
			return o, nil, fmt.Errorf("-state-key-file: %w", err)
		}
		kf.OnReload = func(ids []string, err error) {
			if err != nil {
				logger.Error("everything-server: key file not reloaded; keeping the keys in use", "file", f.keyFile, "err", err)
				return
			}
			logger.Info("everything-server: request-state keys reloaded", "file", f.keyFile, "keyIDs", strings.Join(ids, ","))
		}
		o.Codec = kf.Ring
	default:
		keys := f.keys
		if keys == "" {
			keys = os.Getenv("ROUNDTRIP_STATE_KEYS")
		}
		k, err := requeststate.ParseKeys(keys)
		if err != nil {
			return o, nil, fmt.Errorf("-state-keys: %w", err)
		}
		o.Keys = k
	}
	if f.ttl < 0 {
		return o, nil, fmt.Errorf("-state-ttl must be positive")
	}
	o.TTL = f.ttl
	g, err := guardOf(f)
	if err != nil {
		return o, nil, err
	}
	o.Guard = g
	return o, kf, nil
}

// guardOf builds the single-use guard the flags ask for.
func guardOf(f stateFlags) (requeststate.Guard, error) {
	switch {
	case f.guard == "":
		return nil, nil
	case f.guard == "memory":
		g := requeststate.NewMemoryGuard()
		g.Lease = f.lease
		return g, nil
	}
	client, err := redisClient("-guard", f.guard, f.sentinels)
	if err != nil {
		return nil, err
	}
	g := redisguard.New(client)
	g.Replicas, g.Lease = f.replicas, f.lease
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	// Record the store's generation before any state is issued; a store
	// not up yet is not fatal (the server answers 503 until it is).
	if err := g.Prepare(ctx); err != nil {
		slog.Warn("everything-server: the single-use store is not reachable yet", "err", err)
	}
	return g, nil
}

// redisClient builds the Redis client of a flag (name, for errors): a
// URL (redis://, rediss://, unix:///PATH.sock), or with sentinels
// (comma-separated HOST:PORT) the name of the Sentinel master, followed
// through failovers.
func redisClient(name, value, sentinels string) (redis.UniversalClient, error) {
	if sentinels != "" {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: value, SentinelAddrs: strings.Split(sentinels, ","),
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}), nil
	}
	opts, err := redis.ParseURL(value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second, time.Second
	return redis.NewClient(opts), nil
}

// sessionStoreOf builds the store of 2025-era sessions -session-store
// asks for: nil (each process keeps its own) or one in Redis, shared by
// every process given the same store.
func sessionStoreOf(f stateFlags) (mcp.SessionStore, error) {
	if f.sessions == "" {
		return nil, nil
	}
	client, err := redisClient("-session-store", f.sessions, f.sentinels)
	if err != nil {
		return nil, err
	}
	return redissessions.New(client, redissessions.Options{}), nil
}
