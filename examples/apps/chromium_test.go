package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

// The page as a browser renders it: headless Chromium opens the demo
// host, which loads the page through its sandbox proxy (another
// origin) into an inner sandboxed iframe, answers ui/initialize, sends
// the tool's input and result, and relays the page's tools/call of
// forecast_day. The test then reads the page's own DOM (through both
// frames) and takes a screenshot.
//
// It runs when ROUNDTRIP_CHROMIUM names a Chromium binary (make check
// installs the Debian package and sets it); ROUNDTRIP_SCREENSHOT, when
// set, is where the PNG is written (a temporary file otherwise).
func TestTheViewRendersTheToolResultInHeadlessChromium(t *testing.T) {
	bin := os.Getenv("ROUNDTRIP_CHROMIUM")
	if bin == "" {
		t.Skip("ROUNDTRIP_CHROMIUM is not set")
	}
	d, err := start("127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const width, height = 800, 600
	b, s := open(t, ctx, bin, width, height)
	if _, err := b.call(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		t.Fatal(err)
	}
	url := d.hostURL + "/?city=Lisbon&days=5"
	if _, err := b.call(ctx, s, "Page.navigate", map[string]any{"url": url}); err != nil {
		t.Fatal(err)
	}

	// What the page must show once the round trip through the host is
	// done: the table of days and the hours that forecast_day returned.
	f, day1 := forecast("Lisbon", 5), detail("Lisbon", 1)
	var hours []string
	for _, h := range day1.Hours {
		hours = append(hours, fmt.Sprintf("%02d:00 %d°", h.Hour, h.TempC))
	}
	wantHours := "Day 1 hour by hour: " + strings.Join(hours, ", ")
	var docs []frameDoc
	deadline := time.Now().Add(30 * time.Second)
	for {
		docs = b.documents(ctx, t, s)
		// The page renders the hours, then tells the host what it
		// shows (ui/update-model-context): both must have arrived.
		view, top := find(docs, "about:srcdoc"), find(docs, url)
		if view != nil && strings.Contains(view.text, wantHours) &&
			top != nil && strings.Contains(top.text, "Model context: Forecast for Lisbon") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not render the day's hours and update the host's model context within 30s; frames:\n%s", dump(docs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	view, top := find(docs, "about:srcdoc"), find(docs, url)
	if top == nil || view.depth != 2 {
		t.Fatalf("want the page two frames below the host page; frames:\n%s", dump(docs))
	}
	for _, want := range []string{"Forecast for Lisbon", "Day 5", f.Days[4].Conditions, fmt.Sprintf("%d °C", f.Days[0].HighC)} {
		if !strings.Contains(view.text, want) {
			t.Errorf("the page lacks %q: %s", want, view.text)
		}
	}
	if policy := (*apps.CSP)(nil).Policy(); !strings.Contains(view.csp, policy) {
		t.Errorf("the page runs under %q, want the host's policy %q", view.csp, policy)
	}
	for _, want := range []string{
		"sandbox proxy ready", "ui/initialize from forecast-view (protocol " + apps.ProtocolVersion + ")",
		"page initialized; sending tool-input and tool-result", "tools/call forecast_day from the page",
		"Model context: Forecast for Lisbon", wantHours,
	} {
		if !strings.Contains(top.text, want) {
			t.Errorf("the host page lacks %q: %s", want, top.text)
		}
	}

	shot, err := b.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		t.Fatal(err)
	}
	var data struct{ Data string }
	json.Unmarshal(shot, &data)
	raw, err := base64.StdEncoding.DecodeString(data.Data)
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("ROUNDTRIP_SCREENSHOT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "apps.png")
	}
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if got := img.Bounds().Size(); got != image.Pt(width, height) {
		t.Errorf("screenshot is %v, want %dx%d", got, width, height)
	}
	// The bars: the selected day in red, the four others in blue.
	blue, red := count(img, 0x1f, 0x6f, 0xeb), count(img, 0xd1, 0x24, 0x2f)
	if blue < 4*400 || red < 400 {
		t.Errorf("screenshot %s: %d blue and %d red pixels, want the bars of the chart", out, blue, red)
	}
	t.Logf("screenshot %s: %d bytes, %v, %d blue and %d red pixels", out, len(raw), img.Bounds().Size(), blue, red)
}

// count is the number of pixels of img within a small distance of the
// colour r, g, b.
func count(img image.Image, r, g, b uint8) int {
	n := 0
	near := func(a uint32, c uint8) bool { d := int(a>>8) - int(c); return d > -12 && d < 12 }
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				n++
			}
		}
	}
	return n
}

// open starts Chromium and attaches to its first page. A browser that
// exits (Chromium 148's browser process was seen to crash at start-up
// once in a while: a crash report, then a closed pipe) or does not
// answer within 20s is stopped, its log kept, and started again: once
// as it was, then in the plainer mode of one process without a zygote.
func open(t *testing.T, ctx context.Context, bin string, width, height int) (*browser, string) {
	t.Helper()
	modes := [][]string{nil, nil, {"--single-process", "--no-zygote", "--disable-features=dbus"}}
	for i, extra := range modes {
		b := launch(t, ctx, bin, width, height, extra)
		s, err := b.attach(ctx, 20*time.Second)
		if err == nil {
			return b, s
		}
		if i == len(modes)-1 || ctx.Err() != nil {
			t.Fatalf("chromium %v: %v", extra, err)
		}
		t.Logf("chromium did not answer (%v); stderr so far:\n%s\nstarting it again with %v", err, b.stderr(), modes[i+1])
		b.stop()
	}
	panic("unreachable")
}

// attach finds the page Chromium opened (creating one when there is
// none) and attaches to it, each step within step.
func (b *browser) attach(ctx context.Context, step time.Duration) (string, error) {
	callWithin := func(method string, params any) (json.RawMessage, error) {
		c, cancel := context.WithTimeout(ctx, step)
		defer cancel()
		return b.call(c, "", method, params)
	}
	if _, err := callWithin("Browser.getVersion", nil); err != nil {
		return "", err
	}
	raw, err := callWithin("Target.getTargets", nil)
	if err != nil {
		return "", err
	}
	var targets struct {
		TargetInfos []struct{ TargetID, Type string }
	}
	json.Unmarshal(raw, &targets)
	id := ""
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			id = ti.TargetID
			break
		}
	}
	if id == "" {
		raw, err := callWithin("Target.createTarget", map[string]any{"url": "about:blank"})
		if err != nil {
			return "", err
		}
		var created struct{ TargetID string }
		json.Unmarshal(raw, &created)
		id = created.TargetID
	}
	raw, err = callWithin("Target.attachToTarget", map[string]any{"targetId": id, "flatten": true})
	if err != nil {
		return "", err
	}
	var attached struct{ SessionID string }
	json.Unmarshal(raw, &attached)
	return attached.SessionID, nil
}

// browser is a headless Chromium driven over its DevTools pipe
// (--remote-debugging-pipe: JSON messages ended by a NUL byte, commands
// on fd 3, answers and events on fd 4).
type browser struct {
	w  *os.File
	mu sync.Mutex // serialises writes; never held while waiting
	id int

	pmu     sync.Mutex
	pending map[int]chan cdpReply

	log  lockedBuffer  // Chromium's stderr
	stop func()        // closes the browser and waits for it, once
	gone chan struct{} // closed when Chromium's end of the pipe closes
}

type cdpReply struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func launch(t *testing.T, ctx context.Context, bin string, width, height int, extra []string) *browser {
	t.Helper()
	cmdR, cmdW, err := os.Pipe() // we write commands, Chromium reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe() // Chromium writes fd 4, we read
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--enable-logging=stderr", "--log-level=0",
		// One renderer for every frame, so that DOM.getDocument sees into
		// the sandboxed frames (origins stay apart all the same).
		"--disable-site-isolation-trials", "--disable-features=IsolateSandboxedIframes", "--user-data-dir=" + t.TempDir(),
		fmt.Sprintf("--window-size=%d,%d", width, height), "--remote-debugging-pipe"}
	args = append(append(args, extra...), "about:blank")
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	b := &browser{w: cmdW, pending: map[int]chan cdpReply{}, gone: make(chan struct{})}
	cmd.Stderr = &b.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	evW.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(b.gone)
		r := bufio.NewReader(evR)
		for {
			msg, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var rep cdpReply
			if json.Unmarshal(msg[:len(msg)-1], &rep) != nil || rep.ID == 0 {
				continue // an event
			}
			b.pmu.Lock()
			ch := b.pending[rep.ID]
			delete(b.pending, rep.ID)
			b.pmu.Unlock()
			if ch != nil {
				ch <- rep
			}
		}
	}()
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			b.call(cctx, "", "Browser.close", nil)
			cancel()
			cmdW.Close()
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case <-waited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-waited
			}
			evR.Close()
			<-done
		})
	}
	t.Cleanup(func() {
		b.stop()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", b.stderr())
		}
	})
	return b
}

// lockedBuffer is Chromium's stderr, read while it is still written.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (b *browser) stderr() string {
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	return b.log.buf.String()
}

// call sends one DevTools command (on a page's session when session is
// not empty) and waits for its answer.
func (b *browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	ch := make(chan cdpReply, 1)
	b.mu.Lock()
	b.id++
	id := b.id
	b.mu.Unlock()
	b.pmu.Lock()
	b.pending[id] = ch
	b.pmu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	body, _ := json.Marshal(msg)
	b.mu.Lock()
	_, err := b.w.Write(append(body, 0))
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case rep := <-ch:
		if rep.Error != nil {
			return nil, fmt.Errorf("%s: %d %s", method, rep.Error.Code, rep.Error.Message)
		}
		return rep.Result, nil
	case <-b.gone:
		return nil, fmt.Errorf("%s: chromium exited", method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// frameDoc is the text of one document of the page, with the policy of
// its Content-Security-Policy meta element, and how many frames deep it
// is (0 for the top document).
type frameDoc struct {
	url   string
	depth int
	text  string
	csp   string
}

type domNode struct {
	NodeType        int        `json:"nodeType"`
	NodeName        string     `json:"nodeName"`
	NodeValue       string     `json:"nodeValue"`
	DocumentURL     string     `json:"documentURL"`
	Attributes      []string   `json:"attributes"`
	Children        []*domNode `json:"children"`
	ContentDocument *domNode   `json:"contentDocument"`
}

// documents reads the whole DOM, through every frame.
func (b *browser) documents(ctx context.Context, t *testing.T, session string) []frameDoc {
	t.Helper()
	res, err := b.call(ctx, session, "DOM.getDocument", map[string]any{"depth": -1, "pierce": true})
	if err != nil {
		t.Fatal(err)
	}
	var root struct{ Root *domNode }
	if err := json.Unmarshal(res, &root); err != nil {
		t.Fatal(err)
	}
	var docs []frameDoc
	var walk func(n *domNode, doc int, depth int)
	walk = func(n *domNode, doc int, depth int) {
		if n == nil {
			return
		}
		if n.NodeType == 9 { // a document
			docs = append(docs, frameDoc{url: n.DocumentURL, depth: depth})
			doc = len(docs) - 1
		}
		switch {
		case n.NodeType == 3 && doc >= 0:
			docs[doc].text += n.NodeValue + " "
		case n.NodeName == "META" && doc >= 0:
			a := attrs(n)
			if strings.EqualFold(a["http-equiv"], "Content-Security-Policy") {
				docs[doc].csp = a["content"]
			}
		case n.NodeName == "SCRIPT" || n.NodeName == "STYLE":
			return // their text is code, not what is shown
		}
		for _, c := range n.Children {
			walk(c, doc, depth)
		}
		walk(n.ContentDocument, doc, depth+1)
	}
	walk(root.Root, -1, 0)
	for i := range docs {
		docs[i].text = strings.Join(strings.Fields(docs[i].text), " ")
	}
	return docs
}

func attrs(n *domNode) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		m[strings.ToLower(n.Attributes[i])] = n.Attributes[i+1]
	}
	return m
}

func find(docs []frameDoc, url string) *frameDoc {
	for i := range docs {
		if docs[i].url == url {
			return &docs[i]
		}
	}
	return nil
}

func dump(docs []frameDoc) string {
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "  [%d] %s: %q\n", d.depth, d.url, d.text)
	}
	return b.String()
}
