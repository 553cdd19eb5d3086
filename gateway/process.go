package gateway

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// process is a stdio upstream's child: its own process group, whose
// every member is killed when the upstream is closed or restarted, and
// whose end (the leader's exit) the supervisor waits on.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	exited chan struct{}
	once   sync.Once
}

// killWait is how long a process is given after its standard input
// closes, and again after SIGTERM, before its group is killed.
const killWait = time.Second

func startProcess(u *Upstream) (*process, error) {
	cmd := exec.Command(u.Command, u.Args...)
	cmd.Dir = u.Dir
	cmd.Stderr = u.Stderr
	if len(u.Env) > 0 {
		cmd.Env = append(os.Environ(), u.Env...)
	}
	setGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		stdin.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("gateway: starting %s: %w", u.Command, err)
	}
	w.Close()
	p := &process{cmd: cmd, stdin: stdin, stdout: r, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	return p, nil
}

func (p *process) Read(b []byte) (int, error)  { return p.stdout.Read(b) }
func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close ends the process as the stdio transport prescribes (standard
// input closed, SIGTERM, SIGKILL) and then kills what is left of its
// group, so that nothing it started outlives it. It returns once the
// leader has exited.
func (p *process) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		if !waitFor(p.exited, killWait) {
			terminateGroup(p.cmd)
			if !waitFor(p.exited, killWait) {
				killGroup(p.cmd)
				<-p.exited
			}
		}
		killGroup(p.cmd) // the leader is gone; its children may not be
		p.stdout.Close()
	})
	return nil
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
