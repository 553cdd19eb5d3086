package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// With -metrics-addr an instance serves the MCP metrics for Prometheus
// on a listener of its own: after a three-leg provision call, the
// operation duration per leg, by tool and outcome, and the instance in
// the resource's target_info.
func TestMetricsAddrServesTheMCPMetricsForPrometheus(t *testing.T) {
	dir := t.TempDir()
	sock, stopRedis, err := startRedis(dir)
	if err != nil {
		t.Fatalf("%v (the test command installs redis-server)", err)
	}
	defer stopRedis()
	key := make([]byte, 32)
	rand.Read(key)
	cmd := exec.Command(os.Args[0], "serve", "-id", "m1", "-redis", "unix://"+sock, "-metrics-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), keysEnv+"="+base64.RawURLEncoding.EncodeToString(key), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_SDK_DISABLED=")
	var logs lockedBuffer
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProc(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
		}
	}()
	r := bufio.NewReader(stdout)
	line, _ := r.ReadString('\n')
	go io.Copy(io.Discard, r)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q\n%s", line, logs.String())
	}
	// Standard error is copied by a goroutine of exec: the line may lag.
	var m []string
	if err := waitFor(10*time.Second, func() error {
		if m = regexp.MustCompile(`"msg":"serving metrics"[^\n]*"addr":"([^"]+)"`).FindStringSubmatch(logs.String()); m == nil {
			return errors.New("the instance did not log its metrics address")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v:\n%s", err, logs.String())
	}
	c := mcp.NewClient(mcp.NewHTTPClientTransport("http://"+addr+"/mcp", nil), &mcp.ClientOptions{Elicitation: answer})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, "provision", ProvisionArgs{Name: "scraped"}, nil); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`mcp_server_operation_duration_seconds_count\{[^}]*gen_ai_tool_name="provision"[^}]*roundtrip_input_required="true"[^}]*\} 2`),
		regexp.MustCompile(`mcp_server_operation_duration_seconds_count\{[^}]*gen_ai_tool_name="provision"[^}]*roundtrip_input_required="false"[^}]*\} 1`),
		regexp.MustCompile(`target_info\{[^}]*service_instance_id="m1"[^}]*service_name="fleet"`),
	} {
		if !want.MatchString(body) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(body, "mcp_server_operation_duration_seconds_count", "target_info"))
		}
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the MCP listener serves /metrics too; it should stay apart")
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the instance did not exit on SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d\n%s", code, logs.String())
	}
}

func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return fmt.Sprint(strings.Join(out, "\n"))
}
