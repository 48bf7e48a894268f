package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// The tools' -listen is tested against the real thing: Debian's
// prometheus package (make deps installs it on the host), its promtool
// checking each tool's /metrics, and its server scraping the tools while
// a known workload runs, then asked for the workload's counts.

// requirePrometheus skips the test in the VMs, whose initramfs has no
// Prometheus, and fails it on the host if the package is missing.
func requirePrometheus(t *testing.T) {
	t.Helper()
	if vm := os.Getenv("BPFKIT_VM"); vm != "" {
		t.Skipf("the VM (%s) has no Prometheus: the host runs this test with Debian's", vm)
	}
	for _, name := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("no %s on PATH: make deps installs Debian's prometheus package", name)
		}
	}
}

// metricsAddr is the address a tool started with -listen serves its
// metrics at, from its "serving http://ADDR/metrics" line on stderr.
func (r *running) metricsAddr() string {
	r.t.Helper()
	r.waitFor("/metrics\n")
	line := r.err.String()[strings.Index(r.err.String(), "serving http://"):]
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "serving http://"), "/metrics\n")
	return addr
}

// checkMetrics runs promtool check metrics on what addr serves at
// /metrics, and returns it.
func checkMetrics(t *testing.T, addr string) string {
	t.Helper()
	body := fetchMetrics(t, addr)
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\nof:\n%s", err, out, body)
	}
	return body
}

// fetchMetrics returns what addr serves at /metrics.
func fetchMetrics(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET http://%s/metrics: %s %v", addr, resp.Status, err)
	}
	return string(body)
}

// prometheus is a Prometheus server a test started.
type prometheus struct {
	t    *testing.T
	url  string        // http://127.0.0.1:PORT
	log  *lockedBuffer // what it said
	done chan struct{} // closed when it exited
}

// scrapedByPrometheus starts Debian's Prometheus on a free port of
// 127.0.0.1, its data in a directory of its own, scraping each of targets
// (the addresses tools serve their metrics at, see metricsAddr) every
// second, and returns once it has scraped every target. It is stopped,
// killed if need be, and its directory removed when the test ends, passed
// or failed; should the test binary die, the kernel kills it too
// (PR_SET_PDEATHSIG).
func scrapedByPrometheus(t *testing.T, targets ...string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, target := range targets {
		quoted[i] = strconv.Quote(target)
	}
	config := "global:\n" +
		"  scrape_interval: 1s\n" +
		"  scrape_timeout: 1s\n" +
		"  evaluation_interval: 1s\n" +
		"scrape_configs:\n" +
		"  - job_name: bpfkit\n" +
		"    static_configs:\n" +
		"      - targets: [" + strings.Join(quoted, ", ") + "]\n"
	err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var p *prometheus
	// The free port may be taken between finding it and Prometheus binding it.
	for try := 0; p == nil; try++ {
		p = startPrometheus(t, dir, freePort(t))
		if p == nil && try == 2 {
			t.Fatal("Prometheus did not start in three tries")
		}
	}
	up := fmt.Sprintf("count(up{job=%q} == 1)", "bpfkit")
	p.await(up, func(s []promSample) bool {
		return len(s) == 1 && s[0].Value == float64(len(targets))
	})
	return p
}

// freePort is a TCP port of 127.0.0.1 nothing listens on, for a moment.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs Prometheus with the configuration and data in dir,
// listening on port, and waits until it is ready; nil if it exited first.
func startPrometheus(t *testing.T, dir string, port int) *prometheus {
	t.Helper()
	p := &prometheus{
		t:    t,
		url:  fmt.Sprintf("http://127.0.0.1:%d", port),
		log:  &lockedBuffer{},
		done: make(chan struct{}),
	}
	cmd := exec.Command("prometheus",
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error)
	go func() {
		// The kernel sends Pdeathsig when the thread that started the
		// child ends, not the process: this goroutine keeps its thread
		// until Prometheus has exited.
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
			close(p.done)
		}
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
	})
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		select {
		case <-p.done:
			t.Logf("Prometheus exited before it was ready:\n%s", p.log.String())
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
	}
	t.Fatalf("Prometheus was not ready in a minute:\n%s", p.log.String())
	return nil
}

// promSample is one sample of an instant vector: its labels and value.
type promSample struct {
	Labels map[string]string
	Value  float64
}

// query evaluates expr now, through Prometheus's HTTP API
// (/api/v1/query), into the samples of the instant vector it gives.
func (p *prometheus) query(expr string) []promSample {
	p.t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status, Error string
		Data          struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any // [time, "value"]
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	if err != nil || answer.Status != "success" || answer.Data.ResultType != "vector" {
		p.t.Fatalf("query %s: %s %v %+v", expr, resp.Status, err, answer)
	}
	var samples []promSample
	for _, r := range answer.Data.Result {
		text, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			p.t.Fatalf("query %s: value %v", expr, r.Value)
		}
		samples = append(samples, promSample{r.Metric, v})
	}
	return samples
}

// await queries expr, once a second, until ok accepts its samples, and
// returns them; it fails the test after 30 s (Prometheus scrapes every
// second), with the last samples.
func (p *prometheus) await(expr string, ok func([]promSample) bool) []promSample {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		samples := p.query(expr)
		if ok(samples) {
			return samples
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("Prometheus did not give the samples wanted in 30 s; "+
				"%s is %+v\nPrometheus said:\n%s", expr, samples, p.log.String())
		}
		time.Sleep(time.Second)
	}
}

// scrapedSince waits until Prometheus has scraped every target after
// since (the scrape began later, so what it read came later too), failing
// the test after 30 s.
func (p *prometheus) scrapedSince(since time.Time) {
	p.t.Helper()
	last := fmt.Sprintf("min(timestamp(up{job=%q}))", "bpfkit")
	p.await(last, func(s []promSample) bool {
		return len(s) == 1 && time.UnixMilli(int64(s[0].Value*1000)).After(since)
	})
}

// sum is the sum of the values of expr's samples now, 0 if there is none
// (a counter not yet seen).
func (p *prometheus) sum(expr string) float64 {
	p.t.Helper()
	total := 0.0
	for _, s := range p.query(expr) {
		total += s.Value
	}
	return total
}

// increase is how much expr grew in Prometheus while workload ran: its
// sum scraped after workload began, subtracted from its sum scraped after
// workload returned.
func (p *prometheus) increase(expr string, workload func()) float64 {
	p.t.Helper()
	p.scrapedSince(time.Now())
	before := p.sum(expr)
	workload()
	p.scrapedSince(time.Now())
	return p.sum(expr) - before
}

// TestPrometheusDropmon: dropmon's /metrics passes promtool check
// metrics, and a Prometheus server scraping it while 100 datagrams go to
// a closed UDP port on loopback finds exactly 100 more drops with reason
// NO_SOCKET at __udp4_lib_rcv+0x..., in the series dropmon_drops_total.
//
// dropmon counts the whole kernel's drops, and other tests on this
// machine send datagrams to closed ports too: a window (between two
// scrapes, a second or two) that counted more than 100 is tried again, up
// to five times, saying so; one that counted fewer fails.
func TestPrometheusDropmon(t *testing.T) {
	testutil.RequireRoot(t)
	requirePrometheus(t)
	if !haveDropReasons(t) {
		t.Skip("skb:kfree_skb records no drop reason on this kernel (before 5.17)")
	}
	r := startTool(t, "dropmon", "-listen", "127.0.0.1:0", "60")
	addr := r.metricsAddr()
	r.waitFor("Ctrl-C to stop")
	p := scrapedByPrometheus(t, addr)
	drops := `dropmon_drops_total{job="bpfkit",reason="NO_SOCKET",` +
		`location=~"__udp4_lib_rcv\\+0x[0-9a-f]+"}`
	for try := 1; ; try++ {
		n := p.increase(drops, func() { dropUDP(t, 100) })
		if n == 100 {
			break
		}
		if n < 100 || try == 5 {
			t.Fatalf("Prometheus counted %v drops for 100 datagrams: %+v", n, p.query(drops))
		}
		t.Logf("Prometheus counted %v drops for 100 datagrams: another test's too; trying again", n)
	}
	samples := p.query(drops)
	if len(samples) != 1 {
		t.Fatalf("%d series at the UDP receive site, want 1: %+v", len(samples), samples)
	}
	t.Logf("Prometheus: %s %s", samples[0].Labels["location"], samples[0].Labels["reason"])
	checkMetrics(t, addr)
	r.stop()
}
