package meter

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/procfs"
	"github.com/logbench/logbench/internal/procfs/procfstest"
)

const (
	sandboxCgroup  = "0::/../pause\n"
	postgresCgroup = "0::/../postgres\n"
	shipperCgroup  = "0::/../shipper\n"
	meterCgroup    = "0::/\n"
	meterPID       = 50
)

// instancePod lays out a shipping destination's instance pod as its meter sees it:
// the sandbox, the postgres container (instance manager, postmaster, a backend), the
// shipper and the meter, each container as another user than the meter's, whose
// smaps_rollup the meter may not read; serverTicks and shipperTicks set the user CPU
// time of the postmaster and the shipper, shipperKilobytes the shipper's anonymous
// memory. The server holds serverKilobytes.
func instancePod(proc procfstest.Proc, serverTicks, shipperTicks string, shipperKilobytes int) {
	proc.Process(1, 0, "pause", "0 0 0 0", procfstest.Holding(50, 40, 10, 0).Denied(), sandboxCgroup)
	proc.Process(7, 0, "manager", "50 10 0 0", procfstest.Holding(3000, 2000, 1500, 0).Denied(), postgresCgroup)
	proc.Process(20, 7, "postgres", serverTicks+" 0 30 20", procfstest.Holding(1000, 200, 800, 3000).Denied(), postgresCgroup)
	proc.Process(21, 20, "postgres", "7 3 0 0", procfstest.Holding(200, 300, 700, 5000).Denied(), postgresCgroup)
	proc.Process(30, 0, "fluent-bit", shipperTicks+" 0 0 0", procfstest.Holding(shipperKilobytes, shipperKilobytes-500, 500, 0).Denied(),
		shipperCgroup)
	proc.Process(meterPID, 0, "logbench", "900 0 0 0", procfstest.Pss(9999), meterCgroup)
}

// serverKilobytes is what instancePod's server holds: the anonymous memory of its
// processes, the instance manager's files, and the postgres processes' files and shared
// memory as much as the largest holds.
const serverKilobytes = 2000 + 200 + 300 + 1500 + 800 + 5000

func TestPodSample(t *testing.T) {
	proc := procfstest.New(t)
	instancePod(proc, "100", "40", 8000)
	roles, err := PodSample(proc.Root, meterPID)()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]procfs.Usage{
		Server:  {CPUTicks: 220, CPUKnown: true, MemoryBytes: serverKilobytes << 10, MemoryKnown: true},
		Shipper: {CPUTicks: 40, CPUKnown: true, MemoryBytes: 8000 << 10, MemoryKnown: true},
	}
	if len(roles) != len(want) || roles[Server] != want[Server] || roles[Shipper] != want[Shipper] {
		t.Errorf("roles %+v, want %+v", roles, want)
	}

	// A pod that does not share its process namespace shows the meter alone.
	alone := procfstest.New(t)
	alone.Process(1, 0, "logbench", "1 0 0 0", procfstest.Pss(10), meterCgroup)
	if _, err := PodSample(alone.Root, 1)(); err == nil || !strings.Contains(err.Error(), "share its process namespace") {
		t.Errorf("a meter alone in its namespace: %v, want an error naming the namespace", err)
	}
	if _, err := ReceiverPodSample(alone.Root, 1)(); err == nil ||
		!strings.Contains(err.Error(), "no receiver process in sight") {
		t.Errorf("a receiver's meter alone in its namespace: %v, want an error naming the receiver", err)
	}
}

// receiverPod lays out a syslog receiver's pod as its meter sees it: the sandbox, Fluent
// Bit and the meter.
func receiverPod(proc procfstest.Proc, ticks string, kilobytes int) {
	proc.Process(1, 0, "pause", "0 0 0 0", procfstest.Holding(50, 40, 10, 0).Denied(), sandboxCgroup)
	proc.Process(30, 0, "fluent-bit", ticks+" 0 0 0", procfstest.Holding(kilobytes, kilobytes-500, 500, 0).Denied(),
		shipperCgroup)
	proc.Process(meterPID, 0, "logbench", "900 0 0 0", procfstest.Pss(9999), meterCgroup)
}

// TestReceiverMeasuresARun measures a run as the agent does for a forwarding Syslog
// destination: the server and the sidecar in the instance pod, the receiver in its own.
func TestReceiverMeasuresARun(t *testing.T) {
	instance, pod := servedPod(t)
	receiver := procfstest.New(t)
	receiverPod(receiver, "10", 7000)
	server := httptest.NewServer(NewService(ReceiverPodSample(receiver.Root, meterPID)).Handler())
	t.Cleanup(server.Close)

	measurement, err := WithReceiver{Pod: pod, Receiver: Client{URL: server.URL}}.Start()
	if err != nil {
		t.Fatal(err)
	}
	instancePod(instance, "300", "90", 8000)
	receiverPod(receiver, "260", 12000)
	shipper, err := measurement.Shipper()
	if err != nil || shipper == nil || *shipper.CPUSeconds != 0.5 {
		t.Errorf("shipper %+v, %v; want 0.5 CPU seconds", shipper, err)
	}
	usage, err := measurement.Receiver()
	if err != nil || usage == nil || *usage.CPUSeconds != 2.5 || *usage.PeakMemoryBytes != 12000<<10 {
		t.Errorf("receiver %+v, %v; want 2.5 CPU seconds and a 12000 KiB peak", usage, err)
	}
	measurement.End()
	if _, err := measurement.Receiver(); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an ended receiver's measurement read: %v, want 404", err)
	}

	// An instance pod's meter measures no receiver.
	alone, err := pod.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer alone.End()
	if usage, err := alone.Receiver(); usage != nil || err != nil {
		t.Errorf("the instance pod's receiver: %+v, %v; want none", usage, err)
	}
}

// servedPod serves the meter of an idle instancePod over HTTP for the test's length.
func servedPod(t *testing.T) (procfstest.Proc, Client) {
	proc := procfstest.New(t)
	instancePod(proc, "100", "40", 8000)
	server := httptest.NewServer(NewService(PodSample(proc.Root, meterPID)).Handler())
	t.Cleanup(server.Close)
	return proc, Client{URL: server.URL}
}

// TestServiceMeasuresARun opens a window the way the agent does, over HTTP: the server's
// CPU counts from the opening, the shipper's peak memory is the highest sample even
// after its memory fell, and the window is gone once ended.
func TestServiceMeasuresARun(t *testing.T) {
	proc, client := servedPod(t)

	measurement, err := client.Start()
	if err != nil {
		t.Fatal(err)
	}
	instancePod(proc, "300", "90", 20000) // busy, and a memory peak the next sample sees
	time.Sleep(3 * Sampling)
	instancePod(proc, "300", "140", 9000)
	usage, err := measurement.Server()
	if err != nil {
		t.Fatal(err)
	}
	if usage.CPUSeconds == nil || *usage.CPUSeconds != 2 || usage.WallSeconds <= 0 || usage.PeakMemoryBytes == nil ||
		*usage.PeakMemoryBytes != serverKilobytes<<10 {
		t.Errorf("server %+v (peak %v), want 2 CPU seconds and a %d KiB peak", usage, usage.PeakMemoryBytes, serverKilobytes)
	}
	shipper, err := measurement.Shipper()
	if err != nil {
		t.Fatal(err)
	}
	if shipper == nil || shipper.CPUSeconds == nil || *shipper.CPUSeconds != 1 || shipper.PeakMemoryBytes == nil || *shipper.PeakMemoryBytes != 20000<<10 {
		t.Errorf("shipper %+v, want 1 CPU second and a 20000 KiB peak", shipper)
	}
	measurement.End()
	if _, err := measurement.Server(); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an ended measurement read: %v, want 404", err)
	}
}

// TestServiceBoundsOpenWindows: an agent that died leaves its window open; the meter
// refuses more than maxWindows at once rather than sample without end.
func TestServiceBoundsOpenWindows(t *testing.T) {
	_, client := servedPod(t)
	for range maxWindows {
		measurement, err := client.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer measurement.End()
	}
	if _, err := client.Start(); err == nil || !strings.Contains(err.Error(), http.StatusText(http.StatusTooManyRequests)) {
		t.Errorf("one window too many: %v", err)
	}
}

// TestWindowIDsAreRandom: a pod that can reach the meter cannot read or close another
// run's window by counting: its ID is random, 26 base32 characters (130 bits).
func TestWindowIDsAreRandom(t *testing.T) {
	_, client := servedPod(t)
	seen := map[string]bool{}
	for range 2 {
		measurement, err := client.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer measurement.End()
		path := measurement.(*podMeasurement).path
		id := strings.TrimPrefix(path, "/windows/")
		if len(id) != 26 || seen[id] || id == "1" || id == "2" {
			t.Errorf("window at %s: want a fresh random ID of 26 characters", path)
		}
		seen[id] = true
	}
	guessed := &podMeasurement{client: client, path: "/windows/1"}
	if _, err := guessed.Server(); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a guessed window read: %v, want 404", err)
	}
}

// TestNoShipper: the pods of file and Stdout destinations have no sidecar but the meter.
func TestNoShipper(t *testing.T) {
	proc := procfstest.New(t)
	instancePod(proc, "100", "40", 8000)
	if err := os.RemoveAll(filepath.Join(proc.Root, "30")); err != nil {
		t.Fatal(err)
	}
	window, err := Open(PodSample(proc.Root, meterPID))
	if err != nil {
		t.Fatal(err)
	}
	defer window.Close()
	usage, err := window.Read()
	if err != nil {
		t.Fatal(err)
	}
	if _, found := usage[Shipper]; found || len(usage) != 1 {
		t.Errorf("usage %v, want the server's only", usage)
	}
}

// TestUnknownCPUStaysUnknown: a window whose opening or reading could not count the
// processes' CPU time for sure reports none rather than a low one.
func TestUnknownCPUStaysUnknown(t *testing.T) {
	for _, test := range []struct {
		name            string
		opening, ending bool
	}{{"opening", false, true}, {"ending", true, false}, {"both known", true, true}} {
		t.Run(test.name, func(t *testing.T) {
			readings := []bool{test.opening, test.ending}
			window, err := Open(func() (map[string]procfs.Usage, error) {
				known := readings[0]
				if len(readings) > 1 {
					readings = readings[1:]
				}
				return map[string]procfs.Usage{Server: {CPUTicks: 500, CPUKnown: known, MemoryKnown: true}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			window.Close() // no samples between the opening and the reading
			usage, err := window.Read()
			if err != nil {
				t.Fatal(err)
			}
			if known := test.opening && test.ending; (usage[Server].CPUSeconds != nil) != known {
				t.Errorf("CPU seconds %v, want known %v", usage[Server].CPUSeconds, known)
			}
		})
	}
}

// TestClientWaitsForTheNetworkToAdmitIt: a meter whose port refuses connections at first,
// as an instance pod's NetworkPolicy does until the CNI has programmed a new Job pod's
// address, is connected to once it accepts; a request the meter answered is never sent
// again.
func TestClientWaitsForTheNetworkToAdmitIt(t *testing.T) {
	proc := procfstest.New(t)
	instancePod(proc, "100", "40", 8000)
	// A port nothing listens on refuses connections until the meter listens there.
	reserved, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := reserved.Addr().String()
	if err := reserved.Close(); err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	meter := NewService(PodSample(proc.Root, meterPID)).Handler()
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		meter.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	go func() {
		time.Sleep(4 * dialRetryPause)
		listener, err := net.Listen("tcp", address)
		if err != nil {
			t.Error(err)
			return
		}
		server.Listener = listener
		server.Start()
	}()

	client := Client{URL: "http://" + address}
	measurement, err := client.Start()
	if err != nil {
		t.Fatalf("a meter that accepts after %s: %v", 4*dialRetryPause, err)
	}
	measurement.End()
	if got := requests.Load(); got != 2 {
		t.Errorf("the meter received %d requests, want 2: an opening and an end, each once", got)
	}

	// An answer, even a refusal, ends the request: opening a window is not idempotent.
	requests.Store(0)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(refusing.Close)
	if _, err := (Client{URL: refusing.URL}).Start(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a meter answering 503: %v, want its status", err)
	}
	if got := requests.Load(); got != 1 {
		t.Errorf("a meter answering 503 received %d requests, want 1", got)
	}
}

// TestReceiverMeterThatFails: a receiver's meter that does not answer fails the start of
// the measurement, naming the receiver's meter, and closes the instance pod's window.
func TestReceiverMeterThatFails(t *testing.T) {
	_, pod := servedPod(t)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no meter here", http.StatusNotFound)
	}))
	t.Cleanup(refusing.Close)
	for range maxWindows + 1 {
		_, err := WithReceiver{Pod: pod, Receiver: Client{URL: refusing.URL}}.Start()
		if err == nil || !strings.Contains(err.Error(), "the syslog receiver's meter: the meter at "+refusing.URL+
			" answered 404 Not Found: no meter here") {
			t.Fatalf("a receiver's meter answering 404: %v", err)
		}
	}
	// Every failed start closed its window on the instance pod's meter, which holds at
	// most maxWindows.
	measurement, err := pod.Start()
	if err != nil {
		t.Fatalf("the instance pod's meter after the failed starts: %v", err)
	}
	measurement.End()
}
