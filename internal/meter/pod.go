package meter

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/procfs"
)

const (
	// ContainerName is the meter sidecar of every instance pod logbench creates.
	ContainerName = "logbench-meter"
	// Port serves the meter's windows.
	Port = 9190
	// UID is the meter's user and group in an instance pod, the logbench image's: neither
	// the postgres user nor the shipper's, so that the meter reads of their processes
	// only what /proc shows every user (PodSample).
	UID = 65532

	// maxWindows bounds the measurements open at once: one agent measures one run of a
	// cluster at a time, and a window left open by an agent that died expires.
	maxWindows   = 4
	windowExpiry = time.Hour

	// dialRetry bounds how long a client tries to connect to a meter that refuses or
	// drops its connections, dialRetryPause how often.
	dialRetry      = 20 * time.Second
	dialRetryPause = 250 * time.Millisecond
)

// PodSample reads the usage of an instance pod's containers from the proc folder of a
// container that shares the pod's process namespace: the server is the container
// running postgres, the shipper every other one but the pod's sandbox (PID 1) and the
// meter itself (self). It reads only the files of /proc that every user may read
// (procfs.CgroupGroups), so that the meter runs as a user of its own.
func PodSample(proc string, self int) Sample {
	return podSample(proc, self, Server)
}

// ReceiverPodSample reads the usage of a syslog receiver's pod as PodSample does: every
// container but the sandbox and the meter is the receiver.
func ReceiverPodSample(proc string, self int) Sample {
	return podSample(proc, self, Receiver)
}

// podSample reads a pod's containers by role: Server, the postgres container and the
// shipper beside it, or Receiver, every container; required is the role that must be in
// sight.
func podSample(proc string, self int, required string) Sample {
	return func() (map[string]procfs.Usage, error) {
		groups, err := procfs.CgroupGroups(proc)
		if err != nil {
			return nil, err
		}
		roles := map[string]procfs.Usage{}
		for _, group := range groups {
			role := Shipper
			switch {
			case slices.Contains(group.PIDs, 1) || slices.Contains(group.PIDs, self):
				continue
			case required == Receiver:
				role = Receiver
			case slices.Contains(group.Commands, "postgres"):
				role = Server
			}
			if sum, found := roles[role]; found {
				roles[role] = sum.Plus(group.Usage)
			} else {
				roles[role] = group.Usage
			}
		}
		if _, found := roles[required]; !found {
			return nil, fmt.Errorf("no %s process in sight: the pod must share its process namespace", required)
		}
		return roles, nil
	}
}

// Service serves windows over HTTP: POST /windows opens one, GET /windows/ID reads it
// (the JSON of a map from role to v1alpha1.ProcessUsage) and DELETE /windows/ID closes
// it.
type Service struct {
	sample Sample

	mu sync.Mutex
	// windows by ID: random, so that a client can read or close only the windows it
	// opened, not guess another run's.
	windows map[string]openWindow
}

type openWindow struct {
	*Window
	expires time.Time
}

// NewService serves windows over sample.
func NewService(sample Sample) *Service {
	return &Service{sample: sample, windows: map[string]openWindow{}}
}

// Handler routes the service's requests.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /windows", s.open)
	mux.HandleFunc("GET /windows/{id}", s.read)
	mux.HandleFunc("DELETE /windows/{id}", s.close)
	return mux
}

func (s *Service) open(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, window := range s.windows {
		if time.Now().After(window.expires) {
			window.Close()
			delete(s.windows, id)
		}
	}
	if len(s.windows) >= maxWindows {
		http.Error(w, fmt.Sprintf("%d measurements open already", maxWindows), http.StatusTooManyRequests)
		return
	}
	window, err := Open(s.sample)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	id := rand.Text()
	s.windows[id] = openWindow{window, time.Now().Add(windowExpiry)}
	w.Header().Set("Location", "/windows/"+id)
	w.WriteHeader(http.StatusCreated)
}

func (s *Service) read(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	window, found := s.windows[r.PathValue("id")]
	s.mu.Unlock()
	if !found {
		http.Error(w, "no such measurement: it expired, or the meter restarted", http.StatusNotFound)
		return
	}
	usage, err := window.Read()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(usage)
}

func (s *Service) close(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	window, found := s.windows[r.PathValue("id")]
	delete(s.windows, r.PathValue("id"))
	s.mu.Unlock()
	if found {
		window.Close()
	}
	w.WriteHeader(http.StatusNoContent)
}

// Client measures runs with the meter of a pod, at URL (http://HOST:Port).
type Client struct {
	URL  string
	HTTP *http.Client
}

var _ bench.Meter = Client{}

// Start opens a window.
func (c Client) Start() (bench.Measurement, error) {
	header, _, err := c.do(http.MethodPost, "/windows", http.StatusCreated)
	if err != nil {
		return nil, err
	}
	return &podMeasurement{client: c, path: header.Get("Location")}, nil
}

type podMeasurement struct {
	client Client
	path   string
}

func (m *podMeasurement) read(role string) (*v1alpha1.ProcessUsage, error) {
	_, body, err := m.client.do(http.MethodGet, m.path, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var usage map[string]v1alpha1.ProcessUsage
	if err := json.Unmarshal(body, &usage); err != nil {
		return nil, fmt.Errorf("reading the meter's answer: %w", err)
	}
	measured, found := usage[role]
	if !found {
		return nil, nil
	}
	return &measured, nil
}

func (m *podMeasurement) Server() (v1alpha1.ProcessUsage, error) {
	usage, err := m.read(Server)
	if err == nil && usage == nil {
		err = errors.New("the meter measured no server")
	}
	if err != nil {
		return v1alpha1.ProcessUsage{}, err
	}
	return *usage, nil
}

func (m *podMeasurement) Shipper() (*v1alpha1.ProcessUsage, error) { return m.read(Shipper) }

func (m *podMeasurement) Receiver() (*v1alpha1.ProcessUsage, error) { return m.read(Receiver) }

// End closes the window; a meter that no longer answers lets it expire.
func (m *podMeasurement) End() {
	_, _, _ = m.client.do(http.MethodDelete, m.path, http.StatusNoContent)
}

// WithReceiver measures a forwarding Syslog destination's runs with the meter of its
// instance pod and that of its receiver's pod, both opened when pgbench starts.
type WithReceiver struct {
	Pod, Receiver Client
}

var _ bench.Meter = WithReceiver{}

// Start opens a window on each meter.
func (c WithReceiver) Start() (bench.Measurement, error) {
	pod, err := c.Pod.Start()
	if err != nil {
		return nil, err
	}
	receiver, err := c.Receiver.Start()
	if err != nil {
		pod.End()
		return nil, fmt.Errorf("the syslog receiver's meter: %w", err)
	}
	return receiverMeasurement{Measurement: pod, receiver: receiver}, nil
}

// receiverMeasurement reads the server and the shipper from the instance pod's window,
// the receiver from the receiver pod's.
type receiverMeasurement struct {
	bench.Measurement
	receiver bench.Measurement
}

func (m receiverMeasurement) Receiver() (*v1alpha1.ProcessUsage, error) {
	usage, err := m.receiver.Receiver()
	if err == nil && usage == nil {
		err = errors.New("the syslog receiver's meter measured no receiver")
	}
	return usage, err
}

func (m receiverMeasurement) End() {
	m.Measurement.End()
	m.receiver.End()
}

// do sends a request and returns the header and the body of an answer with status want.
// A connection the network refuses or drops is tried again for dialRetry: a CNI admits a
// new pod through the instance pod's NetworkPolicy only once it has programmed the pod's
// address, which can come after the pod starts. A request that was sent is never sent
// twice (opening a window is not idempotent).
func (c Client) do(method, path string, want int) (http.Header, []byte, error) {
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	deadline := time.Now().Add(dialRetry)
	for {
		header, body, err := c.send(client, method, path, want)
		var dial *net.OpError
		if err == nil || !errors.As(err, &dial) || dial.Op != "dial" || time.Now().After(deadline) {
			return header, body, err
		}
		time.Sleep(dialRetryPause)
	}
}

func (c Client) send(client *http.Client, method, path string, want int) (http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, method, c.URL+path, nil)
	if err != nil {
		return nil, nil, err
	}
	response, err := client.Do(request)
	if err != nil {
		return nil, nil, fmt.Errorf("the meter: %w", err) // which names the URL
	}
	defer response.Body.Close()
	body, err := io.ReadAll(io.LimitReader(response.Body, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("the meter at %s: %w", c.URL, err)
	}
	if response.StatusCode != want {
		return nil, nil, fmt.Errorf("the meter at %s answered %s: %s", c.URL, response.Status, bytes.TrimSpace(body))
	}
	return response.Header, body, nil
}
