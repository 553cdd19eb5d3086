package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// up is the "up" mode: a fleet of -instances instances behind nginx, with
// redis-server on a Unix socket, all in a temporary directory, kept up
// for an outside client until in (standard input) ends or SIGINT/SIGTERM.
// Its first line on out is nginx's MCP endpoint. scripts/load-fleet.sh runs
// the bench module's load run through it.
func up(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("fleet up", flag.ContinueOnError)
	n := fs.Int("instances", 3, "how many instances behind nginx (1 to 26)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fleet-up-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock, stopRedis, err := startRedis(dir)
	if err != nil {
		return err
	}
	defer stopRedis()
	f, err := Start(Config{Self: self, Dir: dir, Instances: *n, Redis: "unix://" + sock})
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintln(out, f.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	eof := make(chan struct{})
	go func() { io.Copy(io.Discard, in); close(eof) }()
	select {
	case <-sig:
	case <-eof:
	}
	return nil
}
